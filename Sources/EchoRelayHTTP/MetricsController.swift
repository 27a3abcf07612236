import EchoRelayCore
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus

/// `GET /metrics`: this process's counters and timers in the Prometheus text format, plus
/// the queues read from the database at each scrape (they are shared by every process).
/// Served by every role, like the health checks; it shows counts, never an id or a secret.
struct MetricsController<Context: RequestContext>: Sendable {
    let store: any QueueStatsStore
    let registry: PrometheusCollectorRegistry

    func addRoutes(to router: Router<Context>) {
        router.get("/metrics") { _, context in
            do {
                for queue in try await store.queueStats() {
                    registry.makeGauge(descriptor: Self.depth, labels: [("kind", queue.kind)]).set(Double(queue.depth))
                    registry.makeGauge(descriptor: Self.oldestDueAge, labels: [("kind", queue.kind)]).set(queue.oldestDueAge)
                }
            } catch {
                // The counters are still worth a scrape when the database is away.
                context.logger.warning("queue figures unavailable for /metrics", metadata: ["error": "\(error)"])
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }

    static var depth: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "echorelay", metricName: "queue", unitName: "depth", helpText: "Unfinished work items of each kind."
        )
    }
    static var oldestDueAge: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "echorelay", metricName: "queue_oldest_due_age", unitName: "seconds",
            helpText: "How long the longest-waiting due item of each kind has been due."
        )
    }
}
