import EchoRelayCore
import EchoRelayWorkers
import Foundation

/// Re-verification with an OAuth 2 authorization server (`ECHORELAY_OAUTH2_*`): token
/// introspection (RFC 7662) and, for phone numbers, OpenID Connect UserInfo.
public struct OAuth2Configuration: Sendable {
    public var introspectionURL: String
    /// EchoRelay's own client at the authorization server, sent as HTTP Basic.
    public var clientID: String
    public var clientSecret: Secret
    /// Required to verify `phone.changed` over OAuth 2.
    public var userInfoURL: String?
    /// The client the tokens must have been issued to; nil: `clientID`.
    public var tokenClientID: String?
    /// When set, an introspection answer's `iss` must equal it.
    public var issuer: String?
    /// Allows plain-http endpoints; for local testing only.
    public var allowHTTP: Bool

    public init(
        introspectionURL: String, clientID: String, clientSecret: Secret, userInfoURL: String? = nil,
        tokenClientID: String? = nil, issuer: String? = nil, allowHTTP: Bool = false
    ) {
        self.introspectionURL = introspectionURL
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.userInfoURL = userInfoURL
        self.tokenClientID = tokenClientID
        self.issuer = issuer
        self.allowHTTP = allowHTTP
    }

    public var authorizationServer: AuthorizationServer {
        AuthorizationServer(introspectionURL: introspectionURL, userInfoURL: userInfoURL, clientID: clientID,
                            clientSecret: clientSecret, policy: OAuth2Policy(tokenClientID: tokenClientID ?? clientID, issuer: issuer))
    }

    /// Refuses settings that cannot work, naming the variable; never quotes the secret.
    func validate() throws {
        try Self.checkURL(introspectionURL, setting: "ECHORELAY_OAUTH2_INTROSPECTION_URL", allowHTTP: allowHTTP)
        if let userInfoURL { try Self.checkURL(userInfoURL, setting: "ECHORELAY_OAUTH2_USERINFO_URL", allowHTTP: allowHTTP) }
        let texts = [("ECHORELAY_OAUTH2_CLIENT_ID", clientID), ("ECHORELAY_OAUTH2_CLIENT_SECRET", clientSecret.revealed)]
            + [("ECHORELAY_OAUTH2_TOKEN_CLIENT_ID", tokenClientID), ("ECHORELAY_OAUTH2_ISSUER", issuer)].compactMap { setting, value in
                value.map { (setting, $0) }
            }
        for (setting, value) in texts where value.isEmpty || value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw ConfigurationError(setting: setting, reason: "must be non-empty text without control characters")
        }
    }

    /// An absolute https URL (http only when allowed), with no credentials or fragment in it.
    static func checkURL(_ url: String, setting: String, allowHTTP: Bool) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty, components.fragment == nil
        else { throw ConfigurationError(setting: setting, reason: "must be an absolute URL such as https://idp.example.com/oauth2/introspect") }
        guard components.user == nil, components.password == nil else {
            throw ConfigurationError(setting: setting, reason: "must not carry credentials: EchoRelay's client secret goes in ECHORELAY_OAUTH2_CLIENT_SECRET")
        }
        guard scheme == "https" || (scheme == "http" && allowHTTP) else {
            throw ConfigurationError(setting: setting, reason: allowHTTP ? "must use http or https" : "must use https (plain http only with ECHORELAY_OAUTH2_ALLOW_HTTP=1, for local testing)")
        }
    }
}
