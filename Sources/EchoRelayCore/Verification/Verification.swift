import Foundation

/// A claimed verification: one pending event and the lease on its work item.
public struct VerificationTask: Sendable, Equatable {
    public var workItemID: Int64
    public var eventID: String
    public var type: EventType
    public var userID: String
    public var sequence: Int64
    public var occurredAt: Date
    public var pushedPhoneNumber: String?
    /// The proof of the task's `path`. Nil only if it was erased, which happens with the final outcome.
    public var echo: EchoCredentials?
    public var oauth2: OAuth2Credentials?
    /// Tries so far, this one included.
    public var attempts: Int
    /// A SET's event is verified by the signature checked when it arrived: no request.
    public var source: EventSource
    /// How the provider is asked: OAuth Echo, OAuth 2, or not at all (a SET).
    public var path: VerificationPath

    /// `path` defaults to what the source and the credentials say.
    public init(
        workItemID: Int64, eventID: String, type: EventType, userID: String, sequence: Int64, occurredAt: Date,
        pushedPhoneNumber: String?, echo: EchoCredentials?, oauth2: OAuth2Credentials? = nil, attempts: Int,
        source: EventSource = .push, path: VerificationPath? = nil
    ) {
        self.source = source
        self.oauth2 = oauth2
        self.path = path ?? (source == .set ? .set : oauth2 == nil ? .echo : .oauth2)
        self.workItemID = workItemID
        self.eventID = eventID
        self.type = type
        self.userID = userID
        self.sequence = sequence
        self.occurredAt = occurredAt
        self.pushedPhoneNumber = pushedPhoneNumber
        self.echo = echo
        self.attempts = attempts
    }
}

/// Why an event ended as it did. The raw values are the `reason` codes the API shows.
public enum VerificationReason: String, Sendable, Codable, CaseIterable, Error {
    // verified
    case providerConfirmed = "provider_confirmed"
    case knownTokenExpired = "known_token_expired"
    /// A Security Event Token whose signature, issuer and audience were checked at `POST /v1/sets`.
    case setSignature = "set_signature"
    /// OAuth 2: the token EchoRelay verified for this user, the newest it verified, unexpired,
    /// was introspected inactive: the session ended.
    case knownTokenInactive = "known_token_inactive"
    // rejected before any request was sent
    case invalidURL = "invalid_url"
    case schemeNotAllowed = "scheme_not_allowed"
    case hostNotAllowed = "host_not_allowed"
    case invalidAuthorization = "invalid_authorization"
    case consumerKeyMismatch = "consumer_key_mismatch"
    case unsupportedSignatureMethod = "unsupported_signature_method"
    // rejected on the provider's answer
    case userMismatch = "user_mismatch"
    case phoneMismatch = "phone_mismatch"
    case accountActive = "account_active"
    case tokenInvalid = "token_invalid"
    case unknownToken = "unknown_token"
    case badSignature = "bad_signature"
    case notAuthenticated = "not_authenticated"
    case forbidden = "forbidden"
    case redirected = "redirected"
    case providerRefused = "provider_refused"
    case unreadableResponse = "unreadable_response"
    // rejected on an OAuth 2 answer (introspection, UserInfo)
    /// Active, but issued to another client than `ECHORELAY_OAUTH2_TOKEN_CLIENT_ID`.
    case wrongClient = "wrong_client"
    /// Active, but from another issuer than `ECHORELAY_OAUTH2_ISSUER`.
    case wrongIssuer = "wrong_issuer"
    /// Introspected inactive, for an event that needs a live session.
    case tokenInactive = "token_inactive"
    /// A deactivation whose token the provider calls active: the account is alive.
    case accountAlive = "account_alive"
    /// A deactivation whose inactive token is not the newest EchoRelay verified for the user.
    case supersededToken = "superseded_token"
    /// A deactivation whose inactive token had merely run out (its `exp` has passed).
    case tokenExpired = "token_expired"
    // unverifiable
    case timestampOutOfWindow = "timestamp_out_of_window"
    case providerUnavailable = "provider_unavailable"
    case echoMissing = "echo_missing"
    case oauth2Missing = "oauth2_missing"
    /// The introspection endpoint kept refusing EchoRelay's own client credentials (401/403).
    case clientRefused = "client_refused"
    /// This process has no provider configured for the event's path.
    case providerNotConfigured = "provider_not_configured"
}

/// The final result of verifying one event.
public struct VerificationOutcome: Sendable, Equatable {
    public var status: EventStatus
    public var reason: VerificationReason
    /// What the provider answered, when it answered with an account.
    public var providerUserID: String?
    public var providerPhoneNumber: String?
    /// SHA-256 of the echo or OAuth 2 token, when the provider confirmed it belongs to the event's user.
    public var confirmedTokenHash: [UInt8]?
    /// The confirmed token's `exp`, as the provider gave it (OAuth 2; nil: none given).
    public var confirmedTokenExpiry: Date?

    public init(
        status: EventStatus, reason: VerificationReason, providerUserID: String? = nil,
        providerPhoneNumber: String? = nil, confirmedTokenHash: [UInt8]? = nil, confirmedTokenExpiry: Date? = nil
    ) {
        self.confirmedTokenExpiry = confirmedTokenExpiry
        self.status = status
        self.reason = reason
        self.providerUserID = providerUserID
        self.providerPhoneNumber = providerPhoneNumber
        self.confirmedTokenHash = confirmedTokenHash
    }

    public static func rejected(_ reason: VerificationReason) -> Self { .init(status: .rejected, reason: reason) }
    public static func unverifiable(_ reason: VerificationReason) -> Self { .init(status: .unverifiable, reason: reason) }
}

/// A user's current verified state (`GET /v1/users/{user_id}`, README).
public struct UserState: Sendable, Equatable {
    public enum State: String, Sendable, Codable { case active, deactivated }

    public var userID: String
    public var state: State
    public var phoneNumber: String?
    public var lastSequence: Int64
    public var lastEventAt: Date
    public var updatedAt: Date
}

extension UserState {
    public init(row: some StoreRow) throws {
        self.init(userID: try row.string(0), state: try row.value(1, "state of a user"), phoneNumber: try row.optionalString(2),
                  lastSequence: try row.int64(3), lastEventAt: try row.date(4), updatedAt: try row.date(5))
    }
}
