import Foundation

/// How long EchoRelay keeps what it knows about an event once everything about it is final:
/// its outcome decided and every delivery of it (replays included) delivered, dead or
/// cancelled. Nil keeps forever.
public struct RetentionPolicy: Sendable, Equatable {
    /// Attempt records (with the heads of the answers) and test deliveries:
    /// `ECHORELAY_RETAIN_ATTEMPTS`.
    public var attempts: Duration?
    /// Deliveries, their attempts and the pushed payload; the event's row stays as its
    /// receipt: `ECHORELAY_RETAIN_EVENTS`.
    public var events: Duration?

    public init(attempts: Duration?, events: Duration?) {
        self.attempts = attempts
        self.events = events
    }

    public static let defaults = RetentionPolicy(attempts: .seconds(30 * 86_400), events: .seconds(90 * 86_400))

    public var keepsEverything: Bool { attempts == nil && events == nil }
}

/// What pruning removed, or in a dry run would remove.
public struct PruneCounts: Sendable, Equatable {
    /// Events cut down to their receipt.
    public var events = 0
    public var deliveries = 0
    /// Attempt records, those of pruned events' deliveries included.
    public var attempts = 0
    public var testDeliveries = 0

    public init(events: Int = 0, deliveries: Int = 0, attempts: Int = 0, testDeliveries: Int = 0) {
        self.events = events
        self.deliveries = deliveries
        self.attempts = attempts
        self.testDeliveries = testDeliveries
    }

    public var isEmpty: Bool { self == PruneCounts() }

    /// Each count with the name metrics and logs give it.
    public var named: [(name: String, count: Int)] {
        [("events", events), ("deliveries", deliveries), ("attempts", attempts), ("test_deliveries", testDeliveries)]
    }

    public static let names = PruneCounts().named.map(\.name)

    public static func += (total: inout PruneCounts, more: PruneCounts) {
        total.events += more.events
        total.deliveries += more.deliveries
        total.attempts += more.attempts
        total.testDeliveries += more.testDeliveries
    }
}

/// One batch of a pruning walk over a table's ids, oldest first.
public struct PruneStep: Sendable, Equatable {
    public var removed: PruneCounts
    /// The last id the batch looked at: the next batch starts after it.
    public var cursor: Int64
    /// The walk reached rows too recent to be pruned, or the end of the table.
    public var done: Bool

    public init(removed: PruneCounts, cursor: Int64, done: Bool) {
        self.removed = removed
        self.cursor = cursor
        self.done = done
    }
}

/// The store's side of retention. Each call is one short transaction over at most `limit`
/// rows, so pruning never holds long locks; with `dryRun` it only counts.
public protocol RetentionStore: Sendable {
    /// Walks deliveries by id after `cursor`. Each event among them that has been final since
    /// before `cutoff` loses its deliveries (and so their attempts) and its pushed payload;
    /// its row stays as the receipt, with `pruned_at` set. While a bulk replay or recover is
    /// still making its deliveries, no event is pruned: it may still need any of them.
    func pruneEvents(finalBefore cutoff: Date, after cursor: Int64, limit: Int, dryRun: Bool) async throws -> PruneStep

    /// Walks attempt records by id after `cursor`, and removes those of events final since
    /// before `cutoff`. `sparing` leaves out events final since before that earlier time:
    /// a dry run's event pass has counted their attempts already.
    func pruneAttempts(finalBefore cutoff: Date, sparing: Date?, after cursor: Int64, limit: Int, dryRun: Bool) async throws -> PruneStep

    /// Removes up to `limit` test deliveries sent before `cutoff`; returns how many. A dry
    /// run counts them all.
    func pruneTestDeliveries(before cutoff: Date, limit: Int, dryRun: Bool) async throws -> Int
}
