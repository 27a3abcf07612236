import EchoRelayCore
import Prometheus

/// What `/metrics` shows of the database, kept by the sampler (`MetricsSampler` in the
/// server), so that a scrape runs no statement and a flood of them costs the database nothing.
public final class StoreFigures: Sendable {
    let registry: PrometheusCollectorRegistry
    private let subscriptionGauges = SubscriptionGauges()

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// Reads the queues and every subscription's health into the gauges `/metrics` shows.
    public func sampleQueues(from store: any QueueStatsStore) async throws {
        let queues = try await store.queueStats()
        let health = try await store.subscriptionHealth()
        for queue in queues {
            registry.makeGauge(descriptor: Self.depth, labels: [("kind", queue.kind)]).set(Double(queue.depth))
            registry.makeGauge(descriptor: Self.oldestDueAge, labels: [("kind", queue.kind)]).set(queue.oldestDueAge)
        }
        subscriptionGauges.show(health, in: registry)
    }

    static var depth: MetricNameDescriptor {
        .echorelay("queue", unit: "depth", help: "Unfinished work items of each kind.")
    }
    static var oldestDueAge: MetricNameDescriptor {
        .echorelay("queue_oldest_due_age", unit: "seconds", help: "How long the longest-waiting due item of each kind has been due.")
    }
}
