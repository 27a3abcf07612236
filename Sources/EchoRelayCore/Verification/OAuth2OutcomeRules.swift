import Crypto
import Foundation

extension OAuth2Credentials {
    /// SHA-256 of the access token, the only form in which EchoRelay keeps a token.
    public var tokenHash: [UInt8] { Array(SHA256.hash(data: Data(accessToken.revealed.utf8))) }
}

/// What an OAuth 2 answer is checked against: the analogue of the echo consumer key check.
public struct OAuth2Policy: Sendable, Equatable {
    /// The client the tokens must have been issued to: the introspection answer's `client_id`.
    public var tokenClientID: String
    /// When set, the introspection answer's `iss` must equal it.
    public var issuer: String?

    public init(tokenClientID: String, issuer: String? = nil) {
        self.tokenClientID = tokenClientID
        self.issuer = issuer
    }
}

/// A token EchoRelay once verified for a user, as the store remembers it (a one-way hash).
public struct ConfirmedToken: Sendable, Equatable {
    /// The `exp` the provider gave; nil when it gave none.
    public var expiresAt: Date?
    /// A later verified `token.rotated` of the same user confirmed another token.
    public var superseded: Bool

    public init(expiresAt: Date?, superseded: Bool) {
        self.expiresAt = expiresAt
        self.superseded = superseded
    }
}

/// The OAuth 2 outcome table of docs/identity-provider.md, as pure functions, one per answer:
/// the introspection answer (RFC 7662 §2.2), then UserInfo (OpenID Connect Core §5.3) for a
/// phone number, or the deactivation rule for an inactive token.
public enum OAuth2OutcomeRules {
    /// What the introspection answer alone says.
    public enum Introspected: Sendable, Equatable {
        /// The answer decides the event (a refusal, a retry, another user's or client's token).
        case decided(VerificationDecision)
        /// Active, issued to EchoRelay's client (and issuer), for the event's user.
        case confirmed(expiresAt: Date?)
        /// `active: false`: the token is dead, or was never issued.
        case inactive
    }

    public static func introspection(_ answer: ProviderAnswer, task: VerificationTask, policy: OAuth2Policy) -> Introspected {
        guard case .response(let status, let body) = answer else { return .decided(.retry) }
        if status >= 500 || status == 429 { return .decided(.retry) }
        let parsed = try? JSONValue.parse(body)
        switch status {
        case 200:
            break
        case 401, 403:
            return .decided(.retryOrGiveUp(.clientRefused))
        case 400 where parsed?.objectValue?["error"]?.stringValue == "invalid_client":
            // RFC 6749 §5.2 lets a server refuse client authentication with a 400.
            return .decided(.retryOrGiveUp(.clientRefused))
        case 300..<400:
            return .decided(.final(.rejected(.redirected)))
        default:
            return .decided(.final(.rejected(.providerRefused)))
        }
        guard let object = parsed?.objectValue, case .bool(let active)? = object["active"] else {
            return .decided(.final(.rejected(.unreadableResponse)))
        }
        guard active else { return .inactive }
        let expiresAt: Date?
        switch object["exp"] {
        case nil, .null?: expiresAt = nil
        case .integer(let seconds)?: expiresAt = Date(timeIntervalSince1970: TimeInterval(seconds))
        case .number(let seconds)? where seconds.isFinite: expiresAt = Date(timeIntervalSince1970: seconds)
        default: return .decided(.final(.rejected(.unreadableResponse)))
        }
        // The client and issuer first: another client's token says nothing about our users.
        guard object["client_id"]?.stringValue == policy.tokenClientID else { return .decided(.final(.rejected(.wrongClient))) }
        if let issuer = policy.issuer, object["iss"]?.stringValue != issuer {
            return .decided(.final(.rejected(.wrongIssuer)))
        }
        guard let subject = object["sub"]?.stringValue, !TextRules.containsNUL(subject) else {
            return .decided(.final(.rejected(.userMismatch)))
        }
        guard subject == task.userID else {
            return .decided(.final(.init(status: .rejected, reason: .userMismatch, providerUserID: subject)))
        }
        return .confirmed(expiresAt: expiresAt)
    }

    /// The outcome of an event whose token was confirmed active for its user, where no other
    /// answer is needed (every type but one that shows a phone number).
    public static func confirmed(task: VerificationTask, tokenHash: [UInt8], expiresAt: Date?) -> VerificationOutcome {
        let alive = task.type.descriptor.evidence != .sessionEnded
        return VerificationOutcome(status: alive ? .verified : .rejected, reason: alive ? .providerConfirmed : .accountAlive,
                                   providerUserID: task.userID, confirmedTokenHash: tokenHash, confirmedTokenExpiry: expiresAt)
    }

    /// A phone number change, once the token is confirmed: verified only if UserInfo, asked
    /// with the same token, names the same user with the pushed number, verified by the provider.
    public static func phone(
        userInfo answer: ProviderAnswer, task: VerificationTask, tokenHash: [UInt8], expiresAt: Date?
    ) -> VerificationDecision {
        guard case .response(let status, let body) = answer else { return .retry }
        if status >= 500 || status == 429 { return .retry }
        let claims = status == 200 ? (try? JSONValue.parse(body))?.objectValue : nil
        let sameUser = claims?["sub"]?.stringValue == task.userID
        // Another user's number is never kept with this event.
        let phone = sameUser ? claims?["phone_number"]?.stringValue.flatMap { TextRules.containsNUL($0) ? nil : $0 } : nil
        let shown = sameUser && phone != nil && phone == task.pushedPhoneNumber
            && claims?["phone_number_verified"] == .bool(true)
        return .final(VerificationOutcome(status: shown ? .verified : .rejected, reason: shown ? .providerConfirmed : .phoneMismatch,
                                          providerUserID: task.userID, providerPhoneNumber: phone, confirmedTokenHash: tokenHash,
                                          confirmedTokenExpiry: expiresAt))
    }

    /// A deactivation whose token was introspected inactive. That proves the session ended
    /// only for a token EchoRelay itself verified for this user (`known`), the newest it
    /// verified, whose `exp` has not passed at `now`: anyone can make up a dead token, and a
    /// token that merely ran out ends no session.
    public static func deactivation(task: VerificationTask, known: ConfirmedToken?, now: Date) -> VerificationOutcome {
        guard let known else { return .rejected(.unknownToken) }
        if known.superseded { return .rejected(.supersededToken) }
        if let expiresAt = known.expiresAt, expiresAt <= now { return .rejected(.tokenExpired) }
        return VerificationOutcome(status: .verified, reason: .knownTokenInactive, providerUserID: task.userID)
    }
}
