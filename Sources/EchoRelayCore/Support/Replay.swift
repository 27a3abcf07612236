import Foundation

/// Which deliveries a bulk replay sends again: original deliveries — (event, subscription)
/// pairs — of non-deleted subscriptions, narrowed by every field that is set.
public struct ReplayFilter: Sendable, Equatable {
    public var userID: String?
    public var subscriptionID: String?
    public var types: [EventType]?
    /// On the time EchoRelay received the event: `since` inclusive, `until` exclusive.
    public var since: Date?
    public var until: Date?
    /// The state of the original delivery; nil means any final state (delivered, dead,
    /// cancelled), so a delivery still being tried is not sent twice.
    public var status: DeliveryStatus?

    public init(userID: String? = nil, subscriptionID: String? = nil, types: [EventType]? = nil, since: Date? = nil,
                until: Date? = nil, status: DeliveryStatus? = nil) {
        self.userID = userID
        self.subscriptionID = subscriptionID
        self.types = types
        self.since = since
        self.until = until
        self.status = status
    }

    /// The filter as JSON, as the audit log and the replay view show it: only the fields set.
    public var json: JSONValue {
        var object: [String: JSONValue] = [:]
        if let userID { object["user_id"] = .string(userID) }
        if let subscriptionID { object["subscription_id"] = .string(subscriptionID) }
        if let types { object["types"] = .array(types.map { .string($0.rawValue) }) }
        if let since { object["since"] = .string(RFC3339.format(since)) }
        if let until { object["until"] = .string(RFC3339.format(until)) }
        if let status { object["status"] = .string(status.rawValue) }
        return .object(object)
    }
}

public enum ReplayKind: String, Sendable, CaseIterable {
    /// One event, to all or some of its subscriptions; its deliveries are created at once.
    case event
    /// A filter over many events, worked through in batches at `ECHORELAY_REPLAY_RATE`.
    case bulk
    /// One subscription's missed events: every verified event of its types in a window that it
    /// has neither received nor still has pending, including those verified while it was
    /// disabled (which got no delivery). Batched like a bulk replay.
    case recover
}

/// What a recover sends: the verified events of the subscription's types, received in
/// [`since`, `until`) — `until` defaults to when the recover starts — that have no delivery
/// to it that was delivered or is still pending. Every one of them is sent once, with the
/// webhook-id its original delivery has or would have had.
public struct Recovery: Sendable, Equatable {
    public var subscriptionID: String
    public var since: Date
    public var until: Date?
    /// Staff asked, explicitly, for events from before the subscription was created.
    public var beforeCreation: Bool

    public init(subscriptionID: String, since: Date, until: Date? = nil, beforeCreation: Bool = false) {
        self.subscriptionID = subscriptionID
        self.since = since
        self.until = until
        self.beforeCreation = beforeCreation
    }

    /// As the replay and its audit entry store and show it: a filter of these fields.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["subscription_id": .string(subscriptionID), "since": .string(RFC3339.format(since))]
        if let until { object["until"] = .string(RFC3339.format(until)) }
        if beforeCreation { object["before_creation"] = .bool(true) }
        return .object(object)
    }

    /// A recover sends only what the subscription could have had: nothing received before it
    /// was created, so a new subscription cannot pull every user's history. The window starts
    /// at the creation at the earliest, unless staff ask for more (`beforeCreation`, recorded in
    /// the replay's filter and its audit entry).
    public static func bounded(subscriptionID: String, since: Date, until: Date?, beforeCreation: Bool,
                               subscriptionCreatedAt created: Date) -> Recovery {
        let early = isEarlier(since, than: created)
        return Recovery(subscriptionID: subscriptionID, since: beforeCreation || !early ? since : created, until: until,
                        beforeCreation: beforeCreation && early)
    }

    /// Compared to the microsecond, the precision times are stored and written with, so a
    /// `since` copied from the subscription's `created_at` is not earlier than it.
    private static func isEarlier(_ time: Date, than other: Date) -> Bool {
        (time.timeIntervalSince1970 * 1_000_000).rounded() < (other.timeIntervalSince1970 * 1_000_000).rounded()
    }

    /// What an app token may not ask of a recover (the API refuses it, naming the field).
    public static func appProblem(beforeCreation: Bool) -> FieldProblem? {
        beforeCreation ? FieldProblem(field: "before_creation", reason: "only admin and support staff may recover from before a subscription was created") : nil
    }
}

public enum ReplayState: String, Sendable {
    /// Deliveries are still being created or are not all final.
    case running
    /// Every delivery was created and has reached a final state.
    case completed
    case cancelled
}

/// A replay and its progress.
public struct Replay: Sendable, Equatable {
    public var id: String
    public var kind: ReplayKind
    public var state: ReplayState
    public var reason: String
    public var actorName: String
    public var actorRole: String
    public var eventID: String?
    public var filter: JSONValue?
    /// The deliveries — (event, subscription) pairs — it sends in all.
    public var matched: Int
    /// Deliveries created so far.
    public var sent: Int
    public var delivered: Int
    /// Dead-lettered deliveries.
    public var failed: Int
    public var createdAt: Date
    /// When it completed or was cancelled.
    public var finishedAt: Date?
}

extension Replay {
    /// Its state follows from its deliveries: completed once all are created and none is pending.
    public init(row: some StoreRow) throws {
        let createdAt = try row.date(11)
        let state: ReplayState = if try row.string(2) == "cancelled" {
            .cancelled
        } else if try row.bool(10), try row.int(15) == 0 {
            .completed
        } else {
            .running
        }
        let finishedAt: Date? = switch state {
        case .cancelled: try row.optionalDate(12)
        case .completed: try row.optionalDate(16) ?? createdAt
        case .running: nil
        }
        self.init(
            id: try row.string(0), kind: ReplayKind(rawValue: try row.string(1)) ?? .bulk, state: state,
            reason: try row.string(3), actorName: try row.string(4), actorRole: try row.string(5),
            eventID: try row.optionalString(6), filter: try row.optionalJSON(7), matched: try row.int(8),
            sent: try row.int(9), delivered: try row.int(13), failed: try row.int(14), createdAt: createdAt,
            finishedAt: finishedAt
        )
    }
}

/// The answer to replaying one event.
public struct ReplayReceipt: Sendable, Equatable {
    public var id: String
    public var eventID: String
    public var subscriptionIDs: [String]
    public var matched: Int

    public init(id: String, eventID: String, subscriptionIDs: [String], matched: Int) {
        self.id = id
        self.eventID = eventID
        self.subscriptionIDs = subscriptionIDs
        self.matched = matched
    }
}

public enum ReplayError: Error, Equatable {
    case eventNotFound
    /// Only verified events are delivered, so only they can be replayed.
    case notVerified(EventStatus)
    /// Named subscriptions that do not exist, were deleted, or do not want this event's type.
    case unknownSubscriptions([String])
    /// Cancel of a replay that has already completed or been cancelled.
    case finished(ReplayState)
    /// Re-verification is only for events that ended unverifiable.
    case notUnverifiable(EventStatus)
    /// No subscription would receive the event's replay (none enabled wants its type): it
    /// would send nothing, so it is refused rather than recorded as done.
    case noSubscription(eventType: String)
    /// No delivery matches a bulk replay's filter: it would send nothing.
    case nothingMatched
    /// A recover of a subscription that has received every event it would send.
    case nothingToRecover
}

/// Replays: new deliveries with the original `webhook-id` and a `replay` marker in the signed
/// body. Each call is one transaction with its audit entry.
public protocol ReplayStore: Sendable {
    /// `subscriptionIDs` nil means every enabled subscription that wants the event's type.
    func replayEvent(id: String, subscriptionIDs: [String]?, actor: Principal, reason: String) async throws -> ReplayReceipt

    /// How many deliveries a bulk replay with this filter would send now. Changes nothing.
    func countReplay(_ filter: ReplayFilter) async throws -> Int

    /// Records a bulk replay (and its audit entry); its deliveries are created later by
    /// `advanceReplays`, in per-user order.
    func startReplay(_ filter: ReplayFilter, actor: Principal, reason: String) async throws -> Replay

    /// How many events a recover would send now. Changes nothing; nil if the subscription
    /// does not exist (or was deleted).
    func countRecovery(_ recovery: Recovery) async throws -> Int?

    /// Records a recover (and its audit entry); its deliveries are created by
    /// `advanceReplays`, in per-user order; a disabled subscription's wait until it is enabled,
    /// as its other pending deliveries do. Throws `ReplayError.nothingToRecover`; nil if the
    /// subscription does not exist.
    func startRecovery(_ recovery: Recovery, actor: Principal, reason: String) async throws -> Replay?

    /// Creates up to `limit` deliveries of the oldest running bulk replay or recover, moving its cursor in
    /// the same transaction. Returns how many it created (0 when that replay had none left),
    /// or nil when no replay has deliveries left to create.
    func advanceReplays(limit: Int) async throws -> Int?

    func replay(id: String) async throws -> Replay?

    /// Stops creating deliveries and cancels its deliveries not yet in flight. Nil if unknown.
    func cancelReplay(id: String, actor: Principal, reason: String) async throws -> Replay?

    /// Gives an `unverifiable` event a fresh proof (echo headers or an access token, which
    /// also sets its path) and a new verification item.
    func reverify(eventID: String, proof: VerificationProof, actor: Principal, reason: String) async throws
}
