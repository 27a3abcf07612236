/// The proofs this relay can have confirmed, by the providers it is configured with. A proof
/// nobody here could confirm is refused at the door (`422`, naming the setting that is
/// missing) rather than stored to end unverifiable.
public struct AcceptedProofs: Sendable, Equatable {
    /// OAuth Echo (`ECHORELAY_CONSUMER_KEY` and `ECHORELAY_ECHO_ALLOWED_HOSTS`).
    public var echo: Bool
    /// OAuth 2 introspection (`ECHORELAY_OAUTH2_INTROSPECTION_URL`).
    public var oauth2: Bool
    /// OpenID Connect UserInfo (`ECHORELAY_OAUTH2_USERINFO_URL`), which shows a phone number.
    public var oauth2UserInfo: Bool

    public init(echo: Bool, oauth2: Bool, oauth2UserInfo: Bool) {
        self.echo = echo
        self.oauth2 = oauth2
        self.oauth2UserInfo = oauth2 && oauth2UserInfo
    }

    public static let all = AcceptedProofs(echo: true, oauth2: true, oauth2UserInfo: true)

    /// Why an event of `type` proven by `path` cannot be confirmed here, or nil.
    public func problem(_ path: VerificationPath, type: EventType) -> FieldProblem? {
        switch path {
        case .echo where !echo:
            FieldProblem(field: "echo", reason: "is not accepted: this relay has no OAuth Echo provider (ECHORELAY_CONSUMER_KEY and ECHORELAY_ECHO_ALLOWED_HOSTS are not set); send oauth2")
        case .oauth2 where !oauth2:
            FieldProblem(field: "oauth2", reason: "is not accepted: this relay has no OAuth 2 provider (ECHORELAY_OAUTH2_INTROSPECTION_URL is not set)")
        case .oauth2 where !oauth2UserInfo && type.descriptor.evidence == .sessionAliveShowingPushedPhone:
            FieldProblem(field: "oauth2", reason: "cannot confirm \(type.rawValue): ECHORELAY_OAUTH2_USERINFO_URL (the OpenID Connect UserInfo endpoint, which shows the phone number) is not set")
        default:
            nil
        }
    }

    /// The proof an event that carries none is asked for: `echo`, unless the relay takes only OAuth 2.
    public var missingProof: VerificationPath { !echo && oauth2 ? .oauth2 : .echo }
}
