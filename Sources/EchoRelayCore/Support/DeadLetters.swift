import Foundation

/// Which dead-lettered deliveries to list or redrive.
public struct DeadLetterFilter: Sendable, Equatable {
    public var subscriptionID: String?
    /// On the time EchoRelay received the event: `since` inclusive, `until` exclusive.
    public var since: Date?
    public var until: Date?

    public init(subscriptionID: String? = nil, since: Date? = nil, until: Date? = nil) {
        self.subscriptionID = subscriptionID
        self.since = since
        self.until = until
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = [:]
        if let subscriptionID { object["subscription_id"] = .string(subscriptionID) }
        if let since { object["since"] = .string(RFC3339.format(since)) }
        if let until { object["until"] = .string(RFC3339.format(until)) }
        return .object(object)
    }
}

/// A delivery that exhausted its tries (or met `410 Gone`).
public struct DeadLetter: Sendable, Equatable {
    /// The delivery's row id: the list cursor.
    public var deliveryID: Int64
    public var eventID: String
    public var subscriptionID: String
    public var replayID: String?
    public var userID: String
    public var type: EventType
    public var sequence: Int64
    public var webhookID: String
    public var attempts: Int
    public var receivedAt: Date
    public var deadAt: Date
    public var lastStatusCode: Int?
    public var lastError: String?
}

extension DeadLetter {
    public init(row: some StoreRow) throws {
        let eventID = try row.string(1)
        self.init(
            deliveryID: try row.int64(0), eventID: eventID, subscriptionID: try row.string(2), replayID: try row.optionalString(3),
            userID: try row.string(4), type: try row.value(5, "type of event \(eventID)"), sequence: try row.int64(6),
            webhookID: try row.string(7), attempts: try row.int(8), receivedAt: try row.date(9), deadAt: try row.date(10),
            lastStatusCode: try row.optionalInt(11), lastError: try row.optionalString(12)
        )
    }
}

public protocol DeadLetterStore: Sendable {
    /// Newest dead letter first; `beforeID` is the cursor of the previous page.
    func deadLetters(_ filter: DeadLetterFilter, beforeID: Int64?, limit: Int) async throws -> [DeadLetter]

    /// Makes the matching dead letters of non-deleted subscriptions pending again, due now,
    /// with a fresh schedule of tries — or, with `dryRun`, only counts them. Returns how many
    /// matched; the audit entry is written in the same transaction.
    func redriveDeadLetters(_ filter: DeadLetterFilter, dryRun: Bool, actor: Principal, reason: String) async throws -> Int
}
