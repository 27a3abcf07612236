import EchoRelayCore
import Logging
import ServiceLifecycle

/// Reads the backlog from the database every `interval` and hands each reading to the
/// ingest gate (`BacklogLimit`) and to `/metrics`; refreshes the queue's statistics when the
/// backlog has outgrown them (`QueueStatistics`). One per process that takes ingest: the
/// database is shared, so the reading counts what every process received, and an ingest-only
/// process sees the drain done by worker processes elsewhere.
struct BacklogSampler: Service, CustomStringConvertible {
    var description: String { "BacklogSampler" }

    let store: any BacklogStore
    let limit: BacklogLimit
    let interval: Duration
    /// Opens once the schema is migrated; nothing is read before.
    let ready: Gate
    let metrics: RelayMetrics
    let logger: Logger
    /// The longest pause between readings, however long the last one took.
    static let longestPause = Duration.seconds(2)

    func run() async throws {
        var failing = false
        var statistics = QueueStatistics()
        var refreshFailed = false
        await PeriodicRounds.run(ready: ready) { stopping in
            let started = ContinuousClock.now
            var readingTook = Duration.zero
            do {
                let admittedBefore = limit.readingStarts()
                // A reading waiting for a database that is away must not hold a stop.
                let sample = try await cancelWhenGracefulShutdown { [store, limit] in
                    try await store.sampleBacklog(countingUpTo: limit.countCap)
                }
                readingTook = ContinuousClock.now - started
                if failing { logger.notice("the backlog is read again", metadata: ["backlog.events": "\(sample.count)"]) }
                failing = false
                metrics.backlogSampled(sample.count)
                report(limit.record(sample, admittedBefore: admittedBefore))
                await refreshStatistics(ifOutgrownBy: sample.count, &statistics, failedBefore: &refreshFailed)
            } catch where stopping() {
                return nil
            } catch {
                // Ingest keeps the last reading; a database that is away refuses it anyway.
                if !failing { logger.warning("the backlog could not be read", metadata: ["error": "\(error)"]) }
                failing = true
            }
            // A reading costs time in proportion to the backlog (up to the cap): a large
            // one is read less often, so reading takes about a tenth of the time. The pause
            // stays short, though: a read slowed by a busy database or machine must not
            // leave the gate on a stale reading for long.
            return max(interval, min(readingTook * 10, Self.longestPause))
        }
    }

    /// Refreshes the queue's statistics when the backlog has outgrown them.
    private func refreshStatistics(ifOutgrownBy backlog: Int, _ statistics: inout QueueStatistics, failedBefore: inout Bool) async {
        guard statistics.shouldRefresh(backlog: backlog) else { return }
        do {
            try await store.refreshQueueStatistics()
            logger.info("queue statistics refreshed for the backlog", metadata: ["backlog.events": "\(backlog)"])
        } catch {
            // Without them the queue runs, only dearer: said once.
            if !failedBefore { logger.warning("the queue's statistics could not be refreshed", metadata: ["error": "\(error)"]) }
            failedBefore = true
        }
    }

    /// Once per change, not per refused request.
    private func report(_ change: BacklogLimit.Change?) {
        switch change {
        case .closed(let backlog, let retryAfter):
            logger.notice("ingest paused: the backlog is at its limit; events are answered 503 until it drains", metadata: [
                "backlog.events": "\(backlog)", "backlog.limit": "\(limit.limit)", "http.retry_after": "\(retryAfter)",
                "backlog.drain_per_second": "\(limit.drainPerSecond.map { Int($0.rounded()) }.map(String.init) ?? "unknown")",
            ])
        case .opened(let backlog):
            logger.notice("ingest resumed: the backlog is below its limit", metadata: [
                "backlog.events": "\(backlog)", "backlog.limit": "\(limit.limit)",
            ])
        case nil:
            break
        }
    }
}
