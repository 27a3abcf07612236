import Logging
import Synchronization

/// Counts accepted and repeated events and reports them at `info` every `interval`, in place
/// of a line per event (which costs a formatted write per request; those lines are `debug`).
/// The report rides on the first request after the interval: no timer, and nothing is said
/// while nothing happens.
final class IngestSummary: Sendable {
    private struct Counts {
        var accepted = 0
        var duplicates = 0
        var since = ContinuousClock.now
    }

    private let counts = Mutex(Counts())
    let interval: Duration

    init(interval: Duration = .seconds(10)) {
        self.interval = interval
    }

    func count(duplicate: Bool, logger: Logger) {
        let now = ContinuousClock.now
        let report = counts.withLock { counts -> Counts? in
            if duplicate { counts.duplicates += 1 } else { counts.accepted += 1 }
            guard now - counts.since >= interval else { return nil }
            defer { counts = Counts(since: now) }
            return counts
        }
        guard let report else { return }
        logger.info("events received", metadata: [
            "events.accepted": "\(report.accepted)", "events.duplicates": "\(report.duplicates)",
            "interval.seconds": "\((now - report.since).components.seconds)",
        ])
    }
}
