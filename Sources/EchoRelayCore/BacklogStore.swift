/// One reading of the backlog: the events received and not yet final for every subscription.
public struct BacklogSample: Sendable, Equatable {
    /// Events awaiting verification plus events with at least one pending original delivery
    /// to an enabled subscription that is not down, counted up to the cap the store was given
    /// (so a reading never costs more than the cap, however large the backlog).
    public var count: Int
    /// Verification work items created so far, across every process: a counter that only
    /// grows, so its change between two readings is what entered the backlog in between.
    public var arrivals: Int64

    public init(count: Int, arrivals: Int64) {
        self.count = count
        self.arrivals = arrivals
    }
}

public protocol BacklogStore: Sendable {
    /// Reads the backlog, counting at most `cap` events.
    ///
    /// Replayed deliveries do not count (a replay re-sends events already final, at its
    /// own rate), nor do deliveries to disabled subscriptions, which wait for an operator
    /// rather than for the workers, nor deliveries to a subscription that is down: one whose
    /// every attempt has failed for `downAfter` or longer (`failing_since`). Its deliveries
    /// wait for its retries, not for this relay's capacity, so one subscriber that is down
    /// does not close ingest for every other; they count again from its first success.
    func sampleBacklog(countingUpTo cap: Int, downAfter: Duration) async throws -> BacklogSample

    /// Brings the planner's statistics of the queue tables up to date, when `QueueStatistics`
    /// says the backlog has outgrown them. A store whose planner needs none does nothing.
    func refreshQueueStatistics() async throws
}

extension BacklogStore {
    /// The reading `ECHORELAY_BACKLOG_LIMIT` takes.
    public func sampleBacklog(countingUpTo cap: Int) async throws -> BacklogSample {
        try await sampleBacklog(countingUpTo: cap, downAfter: BacklogSample.subscriberDownAfter)
    }
}

extension BacklogSample {
    /// How long a subscription's attempts must all have failed before its deliveries stop
    /// counting: long enough that a few failed attempts of a subscriber that is up (a
    /// timeout under load, one `500`) do not make its share flicker in and out.
    public static let subscriberDownAfter = Duration.seconds(10)
}

/// When the queue tables' statistics need refreshing. PostgreSQL plans the queue's statements
/// — and keeps the plans of prepared ones for the connection's life — from statistics taken
/// while the queue was small (autovacuum analyzes a minute after a burst at best). With every
/// partial index of the queue believed empty, it scanned the wrong one: under a backlog of
/// 10,000, recording an attempt read 19,500 pending deliveries to find 9 by id (16 ms instead
/// of 0.2). So the backlog reading refreshes them once the backlog has grown past `floor` and
/// to `growth` times what it was at the last refresh; a backlog that has drained starts over.
public struct QueueStatistics: Sendable {
    public let floor: Int
    public let growth: Int
    private var refreshedAt = 0

    public init(floor: Int = 1_000, growth: Int = 4) {
        precondition(floor > 0 && growth > 1)
        self.floor = floor
        self.growth = growth
    }

    /// Whether the statistics should be refreshed at this backlog; if so, counts it as done.
    public mutating func shouldRefresh(backlog: Int) -> Bool {
        if backlog < refreshedAt / growth { refreshedAt = backlog }
        guard backlog >= max(floor, refreshedAt * growth) else { return false }
        refreshedAt = backlog
        return true
    }
}
