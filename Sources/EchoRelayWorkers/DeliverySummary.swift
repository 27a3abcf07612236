import EchoRelayCore
import Logging
import Synchronization

/// Counts delivery outcomes and reports them at `info` every `interval`, in place of a line
/// per delivered webhook (those are `debug`; retries and dead letters keep their own lines).
/// The report rides on the first outcome after the interval: no timer, and nothing is said
/// while nothing is sent.
final class DeliverySummary: Sendable {
    private struct Counts {
        var delivered = 0
        var retried = 0
        var dead = 0
        var since = ContinuousClock.now
    }

    private let counts = Mutex(Counts())
    let interval: Duration

    init(interval: Duration = .seconds(10)) {
        self.interval = interval
    }

    func count(_ next: DeliveryNext, logger: Logger) {
        let now = ContinuousClock.now
        let report = counts.withLock { counts -> Counts? in
            switch next {
            case .delivered: counts.delivered += 1
            case .retry: counts.retried += 1
            case .dead: counts.dead += 1
            }
            guard now - counts.since >= interval else { return nil }
            defer { counts = Counts(since: now) }
            return counts
        }
        guard let report else { return }
        logger.info("webhooks sent", metadata: [
            "deliveries.delivered": "\(report.delivered)", "deliveries.retried": "\(report.retried)",
            "deliveries.dead": "\(report.dead)", "interval.seconds": "\((now - report.since).components.seconds)",
        ])
    }
}
