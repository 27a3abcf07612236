import EchoRelayCore
import EchoRelayHTTP
import Logging
import ServiceLifecycle

/// Reads the queues and the subscriptions' health into the gauges of `/metrics` every
/// `interval`, so that a scrape runs no statement (`StoreFigures`).
struct MetricsSampler: Service, CustomStringConvertible {
    var description: String { "MetricsSampler" }

    let store: any EchoRelayStore
    let figures: StoreFigures
    let interval: Duration
    /// Opens once the schema is migrated; nothing is read before.
    let ready: Gate
    let logger: Logger

    func run() async throws {
        var failing = false
        await PeriodicRounds.run(ready: ready) { stopping in
            do {
                try await cancelWhenGracefulShutdown { [store, figures] in try await figures.sampleQueues(from: store) }
                failing = false
            } catch where stopping() {
                return nil
            } catch {
                // The counters are still worth a scrape; the gauges keep their last reading.
                if !failing { logger.warning("queue figures for /metrics could not be read", metadata: ["error": "\(error)"]) }
                failing = true
            }
            return interval
        }
    }
}
