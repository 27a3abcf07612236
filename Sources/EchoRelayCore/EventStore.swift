import Foundation

/// Everything EchoRelay stores, behind one name: PostgreSQL and the embedded SQLite store implement it all.
public typealias EchoRelayStore = EventStore & SubscriptionStore & DeliveryStore & AccessTokenStore & ReplayStore & AuditStore
    & TimelineStore & DeadLetterStore & QueueStatsStore & ConsoleSessionStore & BacklogStore & SecurityEventStore
    & SubscriptionDeliveryStore & TestDeliveryStore & RetentionStore & SecurityEventStreamStore & SecurityEventPollerLock
    & CompletionStatements
    & CompletionStatements

/// The storage behind EchoRelay: PostgreSQL for production and several processes, SQLite
/// embedded for one. Every method is one atomic step: it either happens whole or not at all.
public protocol EventStore: Sendable {
    /// Stores a new event and its verification work item in one transaction, giving it the
    /// user's next sequence number. The same `id` with the same fingerprint returns the
    /// first receipt and stores nothing; with another fingerprint it throws
    /// `IngestError.conflict`.
    func ingest(_ event: IncomingEvent) async throws -> IngestReceipt

    /// One stored event, or nil. Never carries the echo credentials.
    func event(id: String) async throws -> StoredEvent?

    /// Whether the store is reachable and its schema is current.
    func readiness() async -> Readiness

    /// Returns once every change this process has committed so far is as durable as the store
    /// was opened to make it (`Durability`); throws `StandbyUnconfirmed` when it is not within
    /// the store's wait. Ingest confirms inside its own commits; the API calls this before it
    /// acknowledges any other change.
    func confirmDurable() async throws

    // MARK: Verification

    /// Leases up to `limit` due verification items to `owner` for `lease`, counting a try
    /// on each. An item whose lease runs out becomes due again for any worker.
    func claimVerifications(owner: String, limit: Int, lease: Duration) async throws -> [VerificationTask]

    /// Records the final outcome in one transaction: the event's status and the provider's
    /// values, the echo credentials erased, the work item deleted, the user's state and the
    /// confirmed token hash updated, and — when verified — one delivery per matching enabled
    /// subscription created. `kept` is false, changing nothing, if `owner` no longer holds the
    /// lease (another worker has the item). With a `handOff`, the new deliveries that may go
    /// at once are written already leased to its owner and listed (`HandOff`).
    func finishVerification(
        _ task: VerificationTask, owner: String, outcome: VerificationOutcome, handOff: HandOff?
    ) async throws -> FinishedWork

    /// Makes the item due again after `delay`, keeping its try count. False if the lease was lost.
    func retryVerification(_ task: VerificationTask, owner: String, after delay: Duration) async throws -> Bool

    /// Gives the item back at once without counting the try (graceful shutdown).
    func releaseVerification(_ task: VerificationTask, owner: String) async throws

    /// Whether the provider once confirmed the token with this SHA-256 for this user.
    func isTokenConfirmed(userID: String, tokenHash: [UInt8]) async throws -> Bool

    /// The token with this SHA-256 as confirmed for this user (its `exp`, and whether a later
    /// verified rotation replaced it), or nil if the provider never confirmed it for them.
    func confirmedToken(userID: String, tokenHash: [UInt8]) async throws -> ConfirmedToken?

    /// The user's current verified state, or nil before their first verified event.
    func user(id: String) async throws -> UserState?
}

public struct IngestReceipt: Sendable, Equatable {
    public var id: String
    public var sequence: Int64
    /// True when this `id` had been stored before and nothing new was written.
    public var isDuplicate: Bool
    /// True when the event's verification was leased to this process's verify worker as it was
    /// written (`HandOffInbox`): that worker takes it from its inbox, without a claim.
    public var handedOff: Bool

    public init(id: String, sequence: Int64, isDuplicate: Bool, handedOff: Bool = false) {
        self.id = id
        self.sequence = sequence
        self.isDuplicate = isDuplicate
        self.handedOff = handedOff
    }
}

public enum IngestError: Error, Equatable {
    /// The `id` is already stored with a different body.
    case conflict(id: String)
}

/// An event as stored, for the API. Echo credentials are deliberately absent.
public struct StoredEvent: Sendable, Equatable {
    public var id: String
    public var type: EventType
    public var userID: String
    public var sequence: Int64
    public var occurredAt: Date
    public var receivedAt: Date
    public var status: EventStatus
    public var reason: VerificationReason?
    public var decidedAt: Date?
    public var verifiedAt: Date?
    public var providerUserID: String?
    public var providerPhoneNumber: String?
    public var source: EventSource = .push
    public var path: VerificationPath = .echo
    /// Why the session ended, when a Shared Signals event said so (`session_revoked`,
    /// `tokens_revoked`): shown to support and delivered as `data.reason`.
    public var sessionReason: String?
    /// When retention cut the event to its receipt: its deliveries, their attempts and its
    /// pushed payload are gone. Nil while it is kept whole.
    public var prunedAt: Date?
}

extension StoredEvent {
    public init(row: some StoreRow) throws {
        try self.init(summaryRow: row)
        providerUserID = try row.optionalString(12)
        providerPhoneNumber = try row.optionalString(13)
        source = try row.value(14, "source of event \(id)")
        path = try row.value(15, "path of event \(id)")
    }

    /// An event as a list shows it: without the provider's answer, and read as pushed.
    public init(summaryRow row: some StoreRow) throws {
        let id = try row.string(0)
        self.init(
            id: id, type: try row.value(1, "type of event \(id)"), userID: try row.string(2), sequence: try row.int64(3),
            occurredAt: try row.date(4), receivedAt: try row.date(5), status: try row.value(6, "status of event \(id)"),
            reason: try row.optionalString(7).flatMap(VerificationReason.init(rawValue:)), decidedAt: try row.optionalDate(8),
            verifiedAt: try row.optionalDate(9), sessionReason: try row.optionalString(11), prunedAt: try row.optionalDate(10)
        )
    }
}

public enum Readiness: Sendable, Equatable {
    case ready
    case notReady(String)
}
