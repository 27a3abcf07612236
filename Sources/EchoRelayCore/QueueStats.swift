/// How much work of one kind is waiting, for `/metrics`.
public struct QueueStats: Sendable, Equatable {
    /// verification, delivery or replay.
    public var kind: String
    /// Items not yet finished, due or not, leased or not, counted up to `depthCountedUpTo`.
    public var depth: Int
    /// Seconds since the longest-waiting due item became due; 0 when nothing is due.
    public var oldestDueAge: Double

    public init(kind: String, depth: Int, oldestDueAge: Double) {
        self.kind = kind
        self.depth = depth
        self.oldestDueAge = oldestDueAge
    }
}

/// One subscription's state as the alerts read it (docs/alerts.yml).
public struct SubscriptionHealth: Sendable, Equatable {
    public var subscriptionID: String
    public var enabled: Bool
    /// Disabled by EchoRelay itself: its endpoint answered `410 Gone`, or every delivery
    /// failed for `ECHORELAY_DISABLE_AFTER`; not by a person.
    public var disabledAutomatically: Bool
    /// Seconds since its first failed attempt after its last success; 0 while it succeeds.
    public var failingFor: Double
    /// Seconds since its longest-waiting due delivery became due; 0 when none is due.
    public var oldestDueAge: Double

    public init(subscriptionID: String, enabled: Bool, disabledAutomatically: Bool, failingFor: Double, oldestDueAge: Double) {
        self.subscriptionID = subscriptionID
        self.enabled = enabled
        self.disabledAutomatically = disabledAutomatically
        self.failingFor = failingFor
        self.oldestDueAge = oldestDueAge
    }

    /// The prefix of the reason a person's disable writes (`disabled by <who>`); EchoRelay's
    /// own reasons say what the endpoint did.
    public static let disabledByPersonPrefix = "disabled by "
}

extension QueueStats {
    /// A scrape counts at most this many of each kind, so that its cost stops growing with a
    /// backlog (every process is scraped every few seconds); past it the depth reads as this.
    public static let depthCountedUpTo = 100_000
}

public protocol QueueStatsStore: Sendable {
    /// One entry per kind: verification (events awaiting their echo), delivery (pending
    /// deliveries), replay (bulk replays still creating deliveries).
    func queueStats() async throws -> [QueueStats]

    /// Every subscription not deleted, read with one index probe each: the cost grows with
    /// the subscriptions, never with the events or deliveries.
    func subscriptionHealth() async throws -> [SubscriptionHealth]
}
