import Foundation

/// A page of one user's events, newest first.
public struct TimelineQuery: Sendable, Equatable {
    public var userID: String
    public var types: [EventType]?
    public var statuses: [EventStatus]?
    /// On the time EchoRelay received the event: `since` inclusive, `until` exclusive.
    public var since: Date?
    public var until: Date?
    /// Only events with a lower sequence than this (the cursor of the previous page).
    public var beforeSequence: Int64?
    public var limit: Int

    public init(userID: String, types: [EventType]? = nil, statuses: [EventStatus]? = nil, since: Date? = nil,
                until: Date? = nil, beforeSequence: Int64? = nil, limit: Int = 50) {
        self.userID = userID
        self.types = types
        self.statuses = statuses
        self.since = since
        self.until = until
        self.beforeSequence = beforeSequence
        self.limit = limit
    }
}

/// How an event's deliveries stand: its original deliveries by state, and how many
/// replayed deliveries it has had.
public struct DeliverySummary: Sendable, Equatable {
    public var pending = 0
    public var delivered = 0
    public var dead = 0
    public var cancelled = 0
    public var replays = 0
    /// The state of the original delivery to each subscription, by subscription id.
    public var bySubscription: [SubscriptionDeliveryState] = []

    public init(pending: Int = 0, delivered: Int = 0, dead: Int = 0, cancelled: Int = 0, replays: Int = 0,
                bySubscription: [SubscriptionDeliveryState] = []) {
        self.pending = pending
        self.delivered = delivered
        self.dead = dead
        self.cancelled = cancelled
        self.replays = replays
        self.bySubscription = bySubscription
    }

    public var total: Int { pending + delivered + dead + cancelled }
}

/// Where one event's original delivery to one subscription stands.
public struct SubscriptionDeliveryState: Sendable, Equatable {
    public var subscriptionID: String
    public var status: DeliveryStatus

    public init(subscriptionID: String, status: DeliveryStatus) {
        self.subscriptionID = subscriptionID
        self.status = status
    }
}

public struct TimelineEntry: Sendable, Equatable {
    public var event: StoredEvent
    public var deliveries: DeliverySummary

    public init(event: StoredEvent, deliveries: DeliverySummary) {
        self.event = event
        self.deliveries = deliveries
    }
}

public protocol TimelineStore: Sendable {
    /// Up to `limit` events, highest sequence first.
    func timeline(_ query: TimelineQuery) async throws -> [TimelineEntry]
}
