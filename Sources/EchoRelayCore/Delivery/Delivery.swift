import Foundation

/// A claimed delivery: everything needed to build, sign and send one webhook.
public struct DeliveryTask: Sendable, Equatable {
    public var deliveryID: Int64
    public var eventID: String
    public var subscriptionID: String
    public var webhookID: String
    public var url: String
    /// The subscription's secret, and the previous one while its overlap lasts.
    public var secrets: [Secret]
    /// Tries so far, this one included.
    public var attempts: Int
    public var type: EventType
    public var userID: String
    public var sequence: Int64
    public var occurredAt: Date
    public var verifiedAt: Date
    public var phoneNumber: String?
    public var previousPhoneNumber: String?
    /// Set for a replayed delivery.
    public var replay: DeliveryReplay?
    /// Why a session ended, when a Shared Signals event said so (`session_revoked`).
    public var reason: String?

    public init(
        deliveryID: Int64, eventID: String, subscriptionID: String, webhookID: String, url: String, secrets: [Secret],
        attempts: Int, type: EventType, userID: String, sequence: Int64, occurredAt: Date, verifiedAt: Date,
        phoneNumber: String?, previousPhoneNumber: String?, replay: DeliveryReplay? = nil, reason: String? = nil
    ) {
        self.replay = replay
        self.reason = reason
        self.deliveryID = deliveryID
        self.eventID = eventID
        self.subscriptionID = subscriptionID
        self.webhookID = webhookID
        self.url = url
        self.secrets = secrets
        self.attempts = attempts
        self.type = type
        self.userID = userID
        self.sequence = sequence
        self.occurredAt = occurredAt
        self.verifiedAt = verifiedAt
        self.phoneNumber = phoneNumber
        self.previousPhoneNumber = previousPhoneNumber
    }
}

/// The replay a delivery belongs to: its id and when it was asked for, as the signed body's
/// `"replay": {"id", "at"}` shows them.
public struct DeliveryReplay: Sendable, Hashable {
    public var id: String
    public var at: Date

    public init(id: String, at: Date) {
        self.id = id
        self.at = at
    }
}

public enum DeliveryStatus: String, Sendable, Codable, CaseIterable {
    case pending, delivered, dead, cancelled
}

/// Why an attempt failed, as recorded.
public enum DeliveryErrorKind: String, Sendable, Codable, CaseIterable {
    /// Nothing listens at the address: refused at once.
    case connectionRefused = "connection_refused"
    /// No connection within `ECHORELAY_DELIVERY_CONNECT_TIMEOUT`.
    case connectTimeout = "connect_timeout"
    /// Connected, but no whole answer within `ECHORELAY_DELIVERY_TIMEOUT`.
    case timeout
    /// The subscriber closed or reset the connection before answering.
    case reset
    /// Any other failure to connect (the network or host is unreachable).
    case connect
    case dns, tls
    /// An answer, but not 2xx: the HTTP status says which.
    case status
    case refusedAddress = "refused_address"
    case other
}

/// One try, as recorded.
public struct DeliveryAttempt: Sendable, Equatable {
    public var startedAt: Date
    public var duration: Duration
    public var statusCode: Int?
    public var errorKind: DeliveryErrorKind?
    public var error: String?
    /// The first 1 KiB of the answer, as text.
    public var responseHead: String?

    /// The duration as stored and shown: whole milliseconds.
    public var durationMilliseconds: Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// The texts are made storable here, for every store: a subscriber's answer may hold a
    /// NUL, and an attempt that cannot be recorded would be sent again at every lease.
    public init(startedAt: Date, duration: Duration, statusCode: Int?, errorKind: DeliveryErrorKind?, error: String?, responseHead: String?) {
        self.startedAt = startedAt
        self.duration = duration
        self.statusCode = statusCode
        self.errorKind = errorKind
        self.error = error.map(TextRules.storable)
        self.responseHead = responseHead.map(TextRules.storable)
    }
}

extension DeliveryAttempt {
    public init(row: some StoreRow) throws {
        self.init(
            startedAt: try row.date(0), duration: .milliseconds(try row.int(1)), statusCode: try row.optionalInt(2),
            errorKind: try row.optionalString(3).flatMap(DeliveryErrorKind.init(rawValue:)), error: try row.optionalString(4),
            responseHead: try row.optionalString(5)
        )
    }
}

/// What happens to a delivery after an attempt.
public enum DeliveryNext: Sendable, Equatable {
    case delivered
    case retry(after: Duration)
    /// Dead-lettered; with `disableSubscription`, the subscription is disabled for that reason.
    case dead(disableSubscription: String?)

    /// The delivery's status after the attempt: a retry leaves it pending.
    public var status: DeliveryStatus {
        switch self {
        case .delivered: .delivered
        case .retry: .pending
        case .dead: .dead
        }
    }

    /// How long until the next try; zero when there is none.
    public var retryDelay: Duration {
        if case .retry(let after) = self { return after }
        return .zero
    }

    /// delivered, retry or dead, as metrics count them.
    public var outcome: String {
        switch self {
        case .delivered: "delivered"
        case .retry: "retry"
        case .dead: "dead"
        }
    }
}

/// A delivery as the API shows it under its event.
public struct DeliveryRecord: Sendable, Equatable {
    public var subscriptionID: String
    /// Set when this delivery was created by a replay.
    public var replayID: String? = nil
    public var webhookID: String
    public var status: DeliveryStatus
    public var createdAt: Date
    public var finishedAt: Date?
    public var nextAttemptAt: Date?
    public var attempts: [DeliveryAttempt]
}

extension DeliveryRecord {
    /// Without its attempts, which are read on their own.
    public init(row: some StoreRow) throws {
        self.init(
            subscriptionID: try row.string(1), replayID: try row.optionalString(7), webhookID: try row.string(2),
            status: DeliveryStatus(rawValue: try row.string(3)) ?? .pending, createdAt: try row.date(4),
            finishedAt: try row.optionalDate(5), nextAttemptAt: try row.optionalDate(6), attempts: []
        )
    }
}

/// What a write of finished work answered: whether the lease was still ours (else nothing
/// was written), the deliveries it leased to the hand-off's owner, to send now, and whether
/// deliveries are due that only a claim picks up: ones it made due without leasing them, or,
/// for delivery attempts, ones of the same subscriptions left to nobody.
public struct FinishedWork: Sendable, Equatable {
    public var kept: Bool
    public var handedOff: [Int64]
    /// True when a claim should look: a store that cannot tell says true.
    public var madeWorkDue: Bool

    public init(kept: Bool, handedOff: [Int64] = [], madeWorkDue: Bool = true) {
        self.kept = kept
        self.handedOff = handedOff
        self.madeWorkDue = madeWorkDue
    }
}

/// One attempt to record: the delivery it was for, what happened, and what follows.
public struct AttemptRecord: Sendable {
    public var task: DeliveryTask
    public var attempt: DeliveryAttempt
    public var next: DeliveryNext

    public init(task: DeliveryTask, attempt: DeliveryAttempt, next: DeliveryNext) {
        self.task = task
        self.attempt = attempt
        self.next = next
    }
}

/// The storage of deliveries.
public protocol DeliveryStore: Sendable {
    /// Leases up to `limit` deliveries that may be sent now: due, of an enabled subscription,
    /// within its concurrency cap, and — for an ordered subscription — with every earlier
    /// event of the user final for it (docs/architecture.md, "Leases, hand-offs and order"). The cap counts the leases of the
    /// subscription's deliveries, except those in `answered`: deliveries of this process that
    /// hold a lease but no slot, their webhook answered and their attempt not yet recorded, or
    /// handed off and waiting in memory for their turn.
    func claimDeliveries(owner: String, limit: Int, lease: Duration, perSubscriptionCap: Int,
                         answered: [Int64]) async throws -> [DeliveryTask]
    /// Records attempts and what follows each, in one transaction when it can (else each
    /// in its own, so that one bad record cannot fail the others): one result per record, in
    /// order. `kept` is false if the lease was lost. A failure older than `disableAfter` since
    /// the last success disables the subscription. A delivery final now lets the next one of
    /// its queue go; with a `handOff`, that one is leased to its owner at once and listed.
    /// `madeWorkDue` says whether a claim capped at `perSubscriptionCap` would find something
    /// now: due deliveries nobody leased, of a subscription with room under the cap.
    func recordDeliveryAttempts(_ records: [AttemptRecord], owner: String, disableAfter: Duration,
                                handOff: HandOff?, perSubscriptionCap: Int) async -> [Result<FinishedWork, any Error>]
    /// The deliveries leased to `owner` by a hand-off, to send: those of `ids` it still holds.
    func leasedDeliveries(ids: [Int64], owner: String) async throws -> [DeliveryTask]
    /// The safety net of parking (only a queue's head is due): unparks the parked deliveries
    /// that nothing blocks any more, parked since `parkedSince` (nil: all of them). A park
    /// that raced with its blocker becoming final in another transaction is found here.
    /// Returns how many it unparked.
    func unparkStrandedDeliveries(parkedSince: Date?) async throws -> Int
    /// Gives deliveries leased to `owner` back at once without counting the try: one whose
    /// webhook was cancelled at a stop, or hand-offs that never went out.
    func releaseDeliveries(ids: [Int64], owner: String) async throws
    func deliveries(eventID: String) async throws -> [DeliveryRecord]
}
