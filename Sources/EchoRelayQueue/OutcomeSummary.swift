import Logging
import Synchronization

/// Counts a worker's outcomes and reports them at `info` every `interval`, in place of a line
/// per item (those are `debug`; retries, refusals and dead letters keep their own lines). The
/// report rides on the first outcome after the interval: no timer, and nothing is said while
/// nothing happens.
public final class OutcomeSummary: Sendable {
    private struct Counts {
        var values: [String: Int]
        var since: ContinuousClock.Instant
    }

    private let counts: Mutex<Counts>
    public let message: Logger.Message
    /// The metadata keys of the report, one per kind of outcome, each reported even at zero.
    public let keys: [String]
    public let interval: Duration

    public init(_ message: Logger.Message, keys: [String], interval: Duration = .seconds(10)) {
        self.message = message
        self.keys = keys
        self.interval = interval
        counts = Mutex(Counts(values: [:], since: .now))
    }

    /// Counts one outcome under `key`, one of `keys`.
    public func count(_ key: String, logger: Logger) {
        let now = ContinuousClock.now
        let report = counts.withLock { counts -> Counts? in
            counts.values[key, default: 0] += 1
            guard now - counts.since >= interval else { return nil }
            defer { counts = Counts(values: [:], since: now) }
            return counts
        }
        guard let report else { return }
        var metadata: Logger.Metadata = ["interval.seconds": "\((now - report.since).components.seconds)"]
        for key in keys { metadata[key] = "\(report.values[key, default: 0])" }
        logger.info(message, metadata: metadata)
    }
}
