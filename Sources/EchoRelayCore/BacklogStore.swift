/// One reading of the backlog: the events received and not yet final for every subscription.
public struct BacklogSample: Sendable, Equatable {
    /// Events awaiting verification plus events with at least one pending original delivery
    /// to an enabled subscription, counted up to the cap the store was given (so a reading
    /// never costs more than the cap, however large the backlog).
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
    /// rather than for the workers: disabling a subscriber that is down frees its share.
    func sampleBacklog(countingUpTo cap: Int) async throws -> BacklogSample
}
