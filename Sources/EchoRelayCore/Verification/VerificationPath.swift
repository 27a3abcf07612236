/// How an event is confirmed with the provider: the path support sees in `GET /v1/events/{id}`
/// (`path`), the CLI and the console. The raw values are the API's.
public enum VerificationPath: String, Sendable, Codable, CaseIterable {
    /// Pushed to `POST /v1/events` with `echo`: an OAuth Echo request (OAuth 1.0a).
    case echo
    /// Pushed to `POST /v1/events` with `oauth2`: token introspection (RFC 7662), and for a
    /// phone number the OpenID Connect UserInfo endpoint.
    case oauth2
    /// A Security Event Token at `POST /v1/sets`: its signature, issuer and audience.
    case set
}

/// The proof a provider is asked about: OAuth Echo headers or an OAuth 2 access token
/// (`POST /v1/events/{id}/reverify`). A credential either way, never printed.
public enum VerificationProof: Sendable, Equatable {
    case echo(EchoCredentials)
    case oauth2(OAuth2Credentials)

    public var path: VerificationPath {
        switch self {
        case .echo: .echo
        case .oauth2: .oauth2
        }
    }

    /// As an event's columns hold it: one of the two, the other nil.
    public var columns: (echo: EchoCredentials?, oauth2: OAuth2Credentials?) {
        switch self {
        case .echo(let echo): (echo, nil)
        case .oauth2(let oauth2): (nil, oauth2)
        }
    }
}
