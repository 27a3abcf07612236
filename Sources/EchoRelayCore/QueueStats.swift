/// How much work of one kind is waiting, for `/metrics`.
public struct QueueStats: Sendable, Equatable {
    /// verification, delivery or replay.
    public var kind: String
    /// Items not yet finished, due or not, leased or not.
    public var depth: Int
    /// Seconds since the longest-waiting due item became due; 0 when nothing is due.
    public var oldestDueAge: Double

    public init(kind: String, depth: Int, oldestDueAge: Double) {
        self.kind = kind
        self.depth = depth
        self.oldestDueAge = oldestDueAge
    }
}

public protocol QueueStatsStore: Sendable {
    /// One entry per kind: verification (events awaiting their echo), delivery (pending
    /// deliveries), replay (bulk replays still creating deliveries).
    func queueStats() async throws -> [QueueStats]
}
