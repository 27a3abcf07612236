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

/// A page of events across users, newest received first: support's "what was rejected in
/// the last hour", "what is stuck unverifiable".
public struct RecentEventsQuery: Sendable, Equatable {
    public var types: [EventType]?
    public var statuses: [EventStatus]?
    public var reasons: [VerificationReason]?
    /// Only events with an original delivery to this subscription.
    public var subscriptionID: String?
    /// On the time EchoRelay received the event: `since` inclusive, `until` exclusive.
    public var since: Date?
    public var until: Date?
    /// Only events received before this one (the cursor of the previous page).
    public var before: RecentEventsCursor?
    public var limit: Int

    public init(types: [EventType]? = nil, statuses: [EventStatus]? = nil, reasons: [VerificationReason]? = nil,
                subscriptionID: String? = nil, since: Date? = nil, until: Date? = nil,
                before: RecentEventsCursor? = nil, limit: Int = 50) {
        self.types = types
        self.statuses = statuses
        self.reasons = reasons
        self.subscriptionID = subscriptionID
        self.since = since
        self.until = until
        self.before = before
        self.limit = limit
    }
}

/// Where a page of recent events ends: the last event's receipt time, in whole microseconds
/// (as both stores keep it, so no rounding moves the boundary), and its id, which orders the
/// events received in the same transaction.
public struct RecentEventsCursor: Sendable, Equatable {
    public var receivedAtMicroseconds: Int64
    public var eventID: String

    public init(receivedAtMicroseconds: Int64, eventID: String) {
        self.receivedAtMicroseconds = receivedAtMicroseconds
        self.eventID = eventID
    }

    /// The cursor after `event`.
    public init(after event: StoredEvent) {
        self.init(receivedAtMicroseconds: Int64((event.receivedAt.timeIntervalSince1970 * 1_000_000).rounded()), eventID: event.id)
    }

    /// As it travels in `next_cursor`: `<microseconds>~<event id>` (an event id has no `~`).
    public var text: String { "\(receivedAtMicroseconds)~\(eventID)" }

    public init?(text: String) {
        let parts = text.split(separator: "~", maxSplits: 1)
        guard parts.count == 2, let microseconds = Int64(parts[0]), microseconds >= 0, !parts[1].isEmpty else { return nil }
        self.init(receivedAtMicroseconds: microseconds, eventID: String(parts[1]))
    }
}

public protocol TimelineStore: Sendable {
    /// Up to `limit` events, highest sequence first.
    func timeline(_ query: TimelineQuery) async throws -> [TimelineEntry]

    /// Up to `limit` events of any user, newest received first (ties by event id, descending).
    func recentEvents(_ query: RecentEventsQuery) async throws -> [TimelineEntry]
}
