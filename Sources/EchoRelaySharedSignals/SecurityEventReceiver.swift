import Crypto
import EchoRelayCore
import Foundation

/// The settings of Shared Signals: whom SETs come from, who we are to them, where their keys
/// are, the push token they must carry, how the transmitter is polled and the token of its
/// management endpoints. Receiving is off unless issuer and audience are configured; the
/// keys' URL, unless given, is the `jwks_uri` of the transmitter's metadata.
public struct SecurityEventReceiverSettings: Sendable {
    /// The transmitter's exact `iss` (`ECHORELAY_SET_ISSUER`).
    public var issuer: String
    /// Our `aud` (`ECHORELAY_SET_AUDIENCE`).
    public var audience: String
    /// The transmitter's JWKS (`ECHORELAY_SET_JWKS_URL`); nil: its metadata's `jwks_uri`.
    public var jwksURL: String?
    /// Plain http for the transmitter's URLs, for local testing only (`ECHORELAY_SET_ALLOW_HTTP=1`).
    public var allowHTTP: Bool
    /// When set, a push must carry `Authorization: Bearer <it>` (`ECHORELAY_SET_PUSH_TOKEN`).
    public var pushToken: Secret?
    /// The bearer token of the transmitter's stream endpoints (`ECHORELAY_SET_TRANSMITTER_TOKEN`).
    public var transmitterToken: Secret?
    /// How the transmitter is polled: its URL (`ECHORELAY_SET_POLL_URL`, else the registered
    /// poll stream's) and token (`ECHORELAY_SET_POLL_TOKEN`, else the transmitter token).
    public var poll: SecurityEventPollSettings
    /// The least time between two fetches of the keys for an unknown `kid`, so a flood of
    /// SETs naming unknown keys cannot make us hammer the transmitter.
    public var keysRefetchInterval: Duration

    public init(issuer: String, audience: String, jwksURL: String?, allowHTTP: Bool = false, pushToken: Secret? = nil,
                transmitterToken: Secret? = nil, poll: SecurityEventPollSettings = .init(),
                keysRefetchInterval: Duration = .seconds(30)) {
        self.keysRefetchInterval = keysRefetchInterval
        self.transmitterToken = transmitterToken
        self.poll = poll
        self.issuer = issuer
        self.audience = audience
        self.jwksURL = jwksURL
        self.allowHTTP = allowHTTP
        self.pushToken = pushToken
    }

    /// What is wrong with the settings, each with the variable it concerns; empty when they can serve.
    public var problems: [(setting: String, reason: String)] {
        var problems: [(setting: String, reason: String)] = []
        if issuer.isEmpty { problems.append(("ECHORELAY_SET_ISSUER", "must not be empty")) }
        if audience.isEmpty { problems.append(("ECHORELAY_SET_AUDIENCE", "must not be empty")) }
        if let jwksURL, let problem = JWKSFetch.problem(url: jwksURL, allowHTTP: allowHTTP) {
            problems.append(("ECHORELAY_SET_JWKS_URL", problem))
        }
        if !issuer.isEmpty, TransmitterClient.wellKnownURL(issuer: issuer) == nil, jwksURL == nil {
            problems.append(("ECHORELAY_SET_ISSUER", "must be an absolute URL to find the transmitter's keys; otherwise set ECHORELAY_SET_JWKS_URL"))
        }
        if let token = pushToken, token.revealed.count < 16 {
            problems.append(("ECHORELAY_SET_PUSH_TOKEN", "must be at least 16 characters long and hold 128 random bits; make one with `echorelay secret`"))
        } else if let token = pushToken, !SecretStrength.isStrong(token.revealed) {
            problems.append(("ECHORELAY_SET_PUSH_TOKEN", "is weaker than 128 bits (too short, or too few kinds of character); make one with `echorelay secret`"))
        }
        if let url = poll.url, let problem = JWKSFetch.problem(url: url, allowHTTP: allowHTTP) {
            problems.append(("ECHORELAY_SET_POLL_URL", problem))
        }
        if !(1 ... 1000).contains(poll.maxEvents) {
            problems.append(("ECHORELAY_SET_POLL_MAX_EVENTS", "must be from 1 to 1000"))
        }
        if poll.wait < .seconds(1) || poll.wait > .seconds(600) {
            problems.append(("ECHORELAY_SET_POLL_WAIT", "must be from 1s to 10m"))
        }
        return problems
    }
}

/// Checks pushed SETs and says what each one is to EchoRelay.
public struct SecurityEventReceiver: Sendable {
    public let settings: SecurityEventReceiverSettings
    public let verifier: SecurityEventTokenVerifier

    public init(settings: SecurityEventReceiverSettings, keys: TransmitterKeys) {
        self.settings = settings
        self.verifier = SecurityEventTokenVerifier(issuer: settings.issuer, audience: settings.audience, keys: keys)
    }

    /// Whether `authorization` (the request's header) carries the push token, when one is set.
    /// Compared in constant time: the token is a credential.
    public func isAuthorized(_ authorization: String?) -> Bool {
        guard let token = settings.pushToken else { return true }
        guard let authorization, authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else { return false }
        let given = SHA256.hash(data: Data(authorization.dropFirst(7).utf8))
        let expected = SHA256.hash(data: Data(token.revealed.utf8))
        return given == expected  // digests compare in constant time
    }

    /// The SET `token` checked, and what the store is to record of it.
    public func receive(_ token: String, now: Date = Date()) async -> Result<ReceivedSecurityEvent, SecurityEventRefusal> {
        await verifier.verify(token, now: now).flatMap { event in
            // Stored and indexed as text: no NUL, and a key short enough for any index.
            guard event.jti.utf8.count <= Self.maximumJTILength else {
                return .failure(.invalidRequest("jti is longer than \(Self.maximumJTILength) bytes"))
            }
            guard !TextRules.containsNUL(event.jti), !TextRules.containsNUL(event.eventType) else {
                return .failure(.invalidRequest("jti and the event type must not contain NUL characters"))
            }
            return .success(Self.record(of: event, token: token, issuer: settings.issuer))
        }
    }

    public static let maximumJTILength = 256

    /// SHA-256 of a SET as received: how the store tells two copies apart.
    public static func fingerprint(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(token.utf8)))
    }

    /// What the store records of a verified SET.
    static func record(of event: VerifiedSecurityEvent, token: String, issuer: String) -> ReceivedSecurityEvent {
        let claims = event.event.objectValue ?? [:]
        let subject = event.subject ?? claims["subject"]
        let disposition: ReceivedSecurityEvent.Disposition
        var verifiedEmail: (userID: String, email: String)?
        switch SecurityEventMeaning(event, issuer: issuer) {
        case .update(let type, let who, let phoneNumber, let reason):
            // CAEP events say when the change happened (`event_timestamp`); others are taken as of `iat`.
            let occurredAt = claims["event_timestamp"].flatMap(Self.seconds).map { Date(timeIntervalSince1970: $0) }
                .flatMap { TextRules.isInStoredRange($0) ? $0 : nil } ?? event.issuedAt
            switch who {
            case .user(let id) where EventFieldRules.userIDProblem(id) != nil:
                disposition = .unmatched("the subject's user id is not one EchoRelay can relay: \(EventFieldRules.userIDProblem(id)!)")
            case .user(let id):
                disposition = .update(type, user: .user(id), phoneNumber: phoneNumber, occurredAt: occurredAt, reason: reason)
            case .phoneNumber(let number):
                disposition = .update(type, user: .phoneNumber(number), phoneNumber: phoneNumber, occurredAt: occurredAt, reason: reason)
            case .email(let address):
                disposition = .update(type, user: .email(address), phoneNumber: phoneNumber, occurredAt: occurredAt, reason: reason)
            case .unmatched(let why): disposition = .unmatched(why)
            }
        case .verification(let state): disposition = .verification(state: state)
        case .noted(let what): disposition = .noted(what)
        case .emailChange(.user(let id), let email):
            disposition = .noted("the user's verified email changed; SETs whose subject is that email name this user")
            verifiedEmail = (id, email)
        case .emailChange:
            disposition = .unmatched("an email change whose subject names no user")
        case .ignored(let why): disposition = .ignored(why)
        }
        return ReceivedSecurityEvent(
            issuer: event.issuer, jti: event.jti, eventType: event.eventType, issuedAt: event.issuedAt,
            subject: subject.map { String(decoding: $0.canonicalEncoding(), as: UTF8.self) },
            fingerprint: fingerprint(token), disposition: disposition, verifiedEmail: verifiedEmail
        )
    }

    private static func seconds(_ value: JSONValue) -> TimeInterval? {
        switch value {
        case .integer(let seconds): TimeInterval(seconds)
        case .number(let seconds): seconds
        default: nil
        }
    }
}
