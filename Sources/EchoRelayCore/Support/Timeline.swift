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

/// How an event's deliveries stand: its original delivery to each subscription, and how many
/// replayed deliveries it has had.
public struct DeliverySummary: Sendable, Equatable {
    /// The state of the original delivery to each subscription, by subscription id.
    public var bySubscription: [SubscriptionDeliveryState]
    public var replays: Int

    public init(bySubscription: [SubscriptionDeliveryState] = [], replays: Int = 0) {
        self.bySubscription = bySubscription
        self.replays = replays
    }

    public var pending: Int { count(.pending) }
    public var delivered: Int { count(.delivered) }
    public var dead: Int { count(.dead) }
    public var cancelled: Int { count(.cancelled) }
    public var total: Int { bySubscription.count }

    private func count(_ status: DeliveryStatus) -> Int {
        bySubscription.count { $0.status == status }
    }
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
