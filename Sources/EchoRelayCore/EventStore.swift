import Foundation

/// The storage behind EchoRelay. PostgreSQL implements it for production; an embedded store
/// follows. Every method is one atomic step: it either happens whole or not at all.
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
}

public struct IngestReceipt: Sendable, Equatable {
    public var id: String
    public var sequence: Int64
    /// True when this `id` had been stored before and nothing new was written.
    public var isDuplicate: Bool

    public init(id: String, sequence: Int64, isDuplicate: Bool) {
        self.id = id
        self.sequence = sequence
        self.isDuplicate = isDuplicate
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

    public init(
        id: String, type: EventType, userID: String, sequence: Int64, occurredAt: Date, receivedAt: Date,
        status: EventStatus
    ) {
        self.id = id
        self.type = type
        self.userID = userID
        self.sequence = sequence
        self.occurredAt = occurredAt
        self.receivedAt = receivedAt
        self.status = status
    }
}

public enum Readiness: Sendable, Equatable {
    case ready
    case notReady(String)
}
