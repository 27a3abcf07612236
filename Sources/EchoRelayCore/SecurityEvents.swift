import Crypto
import Foundation

/// How an event reached EchoRelay: pushed as JSON to `POST /v1/events` (verified with OAuth
/// Echo), or as a Security Event Token to `POST /v1/sets` (verified by its signature).
public enum EventSource: String, Sendable, Codable, CaseIterable {
    case push
    case set
}

/// A Security Event Token whose signature and claims were checked, as the store records it.
/// Every accepted SET is recorded, under its `(issuer, jti)`, whatever it means to EchoRelay.
public struct ReceivedSecurityEvent: Sendable, Equatable {
    public var issuer: String
    public var jti: String
    /// The event type URI, as sent.
    public var eventType: String
    public var issuedAt: Date
    /// The subject (`sub_id`, or the event's `subject`) as compact JSON, for support.
    public var subject: String?
    /// SHA-256 of the compact JWS as pushed.
    public var fingerprint: [UInt8]
    public var disposition: Disposition
    /// A user's verified email as the transmitter now gives it (a RISC identifier change to an
    /// email address): kept so that SETs whose subject is only that email name the user.
    public var verifiedEmail: (userID: String, email: String)?

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.issuer == rhs.issuer && lhs.jti == rhs.jti && lhs.eventType == rhs.eventType && lhs.issuedAt == rhs.issuedAt
            && lhs.subject == rhs.subject && lhs.fingerprint == rhs.fingerprint && lhs.disposition == rhs.disposition
            && lhs.verifiedEmail?.userID == rhs.verifiedEmail?.userID && lhs.verifiedEmail?.email == rhs.verifiedEmail?.email
    }

    /// What the SET is to EchoRelay.
    public enum Disposition: Sendable, Equatable {
        /// A session update for a user: it becomes an event of `type`; `reason` names why a
        /// session ended (`session_revoked`, `tokens_revoked`).
        case update(EventType, user: Subject, phoneNumber: String?, occurredAt: Date, reason: String? = nil)
        /// The transmitter's verification event, with its `state`.
        case verification(state: String?)
        /// Recorded and shown to support, not delivered (what it says).
        case noted(String)
        /// An event type EchoRelay does not relay (why).
        case ignored(String)
        /// A session update whose subject names no user EchoRelay can tell (why).
        case unmatched(String)
    }

    /// Whom an update is about.
    public enum Subject: Sendable, Equatable {
        case user(String)
        /// Only a phone number: the user for whom EchoRelay verified that number, if exactly one.
        case phoneNumber(String)
        /// Only an email address (lower-cased): the user whose verified email it is, if exactly one.
        case email(String)
    }

    public init(issuer: String, jti: String, eventType: String, issuedAt: Date, subject: String?, fingerprint: [UInt8],
                disposition: Disposition, verifiedEmail: (userID: String, email: String)? = nil) {
        self.verifiedEmail = verifiedEmail
        self.issuer = issuer
        self.jti = jti
        self.eventType = eventType
        self.issuedAt = issuedAt
        self.subject = subject
        self.fingerprint = fingerprint
        self.disposition = disposition
    }

    /// The id of the event an update becomes: `set:` and 32 hex digits of the SHA-256 of the
    /// issuer and the `jti`, so a SET pushed again names the same event, and the id stays
    /// within the event id alphabet whatever the `jti` holds.
    public var eventID: String {
        let digest = SHA256.hash(data: Data((issuer + "\n" + jti).utf8))
        return "set:" + digest.prefix(16).lowercaseHex
    }
}

extension ReceivedSecurityEvent.Disposition {
    /// An update whose subject is only a phone number or an email names the user whose
    /// verified number or email it is, if exactly one; `users(column, value)` reads up to two.
    public func matched(users: (_ column: String, _ value: String) async throws -> [String]) async throws -> Self {
        guard case .update(let type, let subject, let phone, let occurredAt, let reason) = self else { return self }
        let (column, value, what): (String, String, String)
        switch subject {
        case .user: return self
        case .phoneNumber(let number): (column, value, what) = ("phone_number", number, "verified phone number")
        case .email(let address): (column, value, what) = ("email", address, "verified email")
        }
        let found = try await users(column, value)
        return found.count == 1
            ? .update(type, user: .user(found[0]), phoneNumber: phone, occurredAt: occurredAt, reason: reason)
            : .unmatched(found.isEmpty ? "no user has this \(what)" : "several users have this \(what)")
    }

    /// As the store records it: its name, why (ignored, unmatched), the verification's state.
    public var columns: (SecurityEventDisposition, note: String?, verificationState: String?) {
        switch self {
        case .update: (.event, nil, nil)
        case .verification(let state): (.verification, nil, state)
        case .noted(let what): (.noted, what, nil)
        case .ignored(let why): (.ignored, why, nil)
        case .unmatched(let why): (.unmatched, why, nil)
        }
    }
}

/// What became of a received SET, as recorded (the API's `disposition`).
public enum SecurityEventDisposition: String, Sendable, Codable, CaseIterable {
    /// It became an event (`event_id`).
    case event
    case verification
    /// Recorded for support, not delivered (RISC account-enabled, credential change required).
    case noted
    case ignored
    case unmatched
    /// Polled and refused: reported to the transmitter in `setErrs` (the note has its code).
    case refused
}

public enum SecurityEventReceipt: Sendable, Equatable {
    /// Recorded now; `event` is the event it became, if any.
    case recorded(SecurityEventDisposition, event: IngestReceipt?)
    /// This `(issuer, jti)` was recorded before: nothing changed.
    case duplicate
}

/// A received SET as support sees it.
public struct SecurityEventRecord: Sendable, Equatable {
    /// Its number, in the order SETs were recorded (the list's cursor).
    public var number: Int64
    public var issuer: String
    public var jti: String
    public var eventType: String
    public var issuedAt: Date
    public var receivedAt: Date
    public var subject: String?
    public var disposition: SecurityEventDisposition
    /// Why it was ignored, unmatched or refused, or what a noted one says.
    public var note: String?
    /// The `state` of a verification event.
    public var verificationState: String?
    /// The event it became (nil if it became none, or the event was deleted since).
    public var eventID: String?
}

extension SecurityEventRecord {
    public init(row: some StoreRow) throws {
        let number = try row.int64(0)
        self.init(
            number: number, issuer: try row.string(1), jti: try row.string(2), eventType: try row.string(3),
            issuedAt: try row.date(4), receivedAt: try row.date(5), subject: try row.optionalString(6),
            disposition: try row.value(7, "disposition of security event \(number)"), note: try row.optionalString(8),
            verificationState: try row.optionalString(9), eventID: try row.optionalString(10)
        )
    }
}

/// A polled SET that failed a check: reported to the transmitter in `setErrs` and recorded for
/// support. Its claims are not trusted, so only the key it was sent under is kept.
public struct RefusedSecurityEvent: Sendable, Equatable {
    public var issuer: String
    /// The key the SET was sent under in the poll's `sets`.
    public var jti: String
    /// SHA-256 of the SET as received.
    public var fingerprint: [UInt8]
    /// The RFC 8935 error code and its description, as reported in `setErrs`.
    public var err: String
    public var description: String

    public init(issuer: String, jti: String, fingerprint: [UInt8], err: String, description: String) {
        self.issuer = issuer
        self.jti = jti
        self.fingerprint = fingerprint
        self.err = err
        self.description = description
    }

    /// The record's note: the code, then why.
    public var note: String { err + ": " + description }
}

/// Where SETs are recorded and read back.
public protocol SecurityEventStore: Sendable {
    /// Records `received` in one transaction, once per `(issuer, jti)`: an update for a known
    /// user becomes an event with the user's next sequence and a verification work item (the
    /// verify worker records its signature as the outcome); a phone-number subject names the
    /// user whose verified number it is, if exactly one, and is recorded as unmatched
    /// otherwise, and so does an email subject with the users' verified emails. A SET
    /// recorded before changes nothing (`.duplicate`), unless it was recorded refused: one
    /// that now passes takes the refused one's place.
    func receiveSecurityEvent(_ received: ReceivedSecurityEvent) async throws -> SecurityEventReceipt

    /// Records a polled SET that failed a check, unless its `(issuer, jti)` is recorded already.
    func recordRefusedSecurityEvent(_ refused: RefusedSecurityEvent) async throws

    /// Received SETs, newest first, at most `limit`: those recorded before the one numbered
    /// `before` (the last of the previous page), and of `disposition` when given.
    func securityEvents(disposition: SecurityEventDisposition?, before: Int64?, limit: Int) async throws -> [SecurityEventRecord]

    /// The SET an event came from, or nil.
    func securityEvent(eventID: String) async throws -> SecurityEventRecord?
}
