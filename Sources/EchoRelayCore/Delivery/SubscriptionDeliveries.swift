import Foundation

/// Which of a subscription's deliveries to list (`GET /v1/subscriptions/{id}/deliveries`).
public struct SubscriptionDeliveryFilter: Sendable, Equatable {
    public var status: DeliveryStatus?
    public var type: EventType?
    public var userID: String?
    /// On the time the delivery was made: `since` inclusive, `until` exclusive.
    public var since: Date?
    public var until: Date?

    public init(status: DeliveryStatus? = nil, type: EventType? = nil, userID: String? = nil, since: Date? = nil, until: Date? = nil) {
        self.status = status
        self.type = type
        self.userID = userID
        self.since = since
        self.until = until
    }
}

/// One delivery in a subscription's list: what it carries and where it stands. Its attempts
/// are listed on their own.
public struct SubscriptionDelivery: Sendable, Equatable {
    public var id: Int64
    public var eventID: String
    public var userID: String
    public var type: EventType
    public var sequence: Int64
    public var replayID: String?
    public var webhookID: String
    public var status: DeliveryStatus
    public var attempts: Int
    public var createdAt: Date
    public var finishedAt: Date?
    /// When it is tried next, while pending.
    public var nextAttemptAt: Date?
    /// The last attempt's HTTP status; nil before any attempt or when none answered.
    public var lastStatusCode: Int?
}

extension SubscriptionDelivery {
    public init(row: some StoreRow) throws {
        let eventID = try row.string(1)
        self.init(
            id: try row.int64(0), eventID: eventID, userID: try row.string(2), type: try row.value(3, "type of event \(eventID)"),
            sequence: try row.int64(4), replayID: try row.optionalString(5), webhookID: try row.string(6),
            status: DeliveryStatus(rawValue: try row.string(7)) ?? .pending, attempts: try row.int(8),
            createdAt: try row.date(9), finishedAt: try row.optionalDate(10), nextAttemptAt: try row.optionalDate(11),
            lastStatusCode: try row.optionalInt(12)
        )
    }
}

/// Every delivery that carried one `webhook-id`: the original delivery of an event to a
/// subscription and its replays share it.
public struct WebhookDeliveries: Sendable, Equatable {
    public var eventID: String
    public var subscriptionID: String
    /// Oldest first, each with its attempts.
    public var deliveries: [DeliveryRecord]

    public init(eventID: String, subscriptionID: String, deliveries: [DeliveryRecord]) {
        self.eventID = eventID
        self.subscriptionID = subscriptionID
        self.deliveries = deliveries
    }
}

/// A subscription's own deliveries, for the app backend that owns it.
public protocol SubscriptionDeliveryStore: Sendable {
    /// The deliveries that carried `webhookID`; nil when none did (or they were pruned).
    func deliveries(webhookID: String) async throws -> WebhookDeliveries?

    /// Newest first (by id), those before `beforeID`.
    func subscriptionDeliveries(subscriptionID: String, _ filter: SubscriptionDeliveryFilter, beforeID: Int64?,
                                limit: Int) async throws -> [SubscriptionDelivery]

    /// The attempts of one of the subscription's deliveries, oldest first; nil when the
    /// subscription has no delivery with that id.
    func deliveryAttempts(subscriptionID: String, deliveryID: Int64) async throws -> [DeliveryAttempt]?
}
