import EchoRelayCore

/// How the poller polls (`ECHORELAY_SET_POLL_*`).
public struct SecurityEventPollSettings: Sendable {
    /// The transmitter's poll endpoint; nil: the registered poll stream's.
    public var url: String?
    /// The bearer credential of each poll (`ECHORELAY_SET_POLL_TOKEN`); nil: the transmitter token.
    public var token: Secret?
    /// `maxEvents` of each poll.
    public var maxEvents: Int
    /// How long a poll may be held open (`ECHORELAY_SET_POLL_WAIT`).
    public var wait: Duration
    /// The least time between two empty polls.
    public var minimumInterval: Duration
    /// The longest wait after an error.
    public var maximumBackoff: Duration
    /// How often a process that does not hold the poller's lock tries to take it.
    public var lockRetryInterval: Duration

    public init(url: String? = nil, token: Secret? = nil, maxEvents: Int = 50, wait: Duration = .seconds(60),
                minimumInterval: Duration = .seconds(1), maximumBackoff: Duration = .seconds(60),
                lockRetryInterval: Duration = .seconds(5)) {
        self.url = url
        self.token = token
        self.maxEvents = maxEvents
        self.wait = wait
        self.minimumInterval = minimumInterval
        self.maximumBackoff = maximumBackoff
        self.lockRetryInterval = lockRetryInterval
    }
}
