import Crypto
import EchoRelayCore
import Foundation
import Hummingbird
import Logging
import Prometheus
import Synchronization

/// `GET /metrics`: this process's counters and timers in the Prometheus text format, plus
/// the queues and subscriptions' health as the sampler last read them from the database
/// (`StoreFigures`; they are shared by every process). A scrape runs no statement.
/// Served by every role, like the health checks; it shows counts, never an id or a secret.
/// With `ECHORELAY_METRICS_TOKEN` set, a scrape must carry it as a bearer token (`401`
/// otherwise, before anything is read).
struct MetricsController<Context: RequestContext>: Sendable {
    let registry: PrometheusCollectorRegistry
    /// The SHA-256 of `ECHORELAY_METRICS_TOKEN`; nil: open to any scraper.
    let tokenDigest: SHA256.Digest?

    init(registry: PrometheusCollectorRegistry, token: Secret? = nil) {
        self.registry = registry
        self.tokenDigest = token.map { SHA256.hash(data: Data($0.revealed.utf8)) }
    }

    func addRoutes(to router: Router<Context>) {
        router.get("/metrics") { request, _ in
            try authorize(request)
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: Self.withHelp(registry.emitToString()))))
        }
    }

    /// Digests compared in constant time (swift-crypto), so the time says nothing of the token.
    private func authorize(_ request: Request) throws {
        guard let tokenDigest else { return }
        let token = try? BearerAuthorizer.presentedToken(request)
        guard let token, SHA256.hash(data: Data(token.utf8)) == tokenDigest else {
            throw Problem.unauthorized("GET /metrics needs Authorization: Bearer with ECHORELAY_METRICS_TOKEN")
        }
    }

    /// The exposition with a `# HELP` line before each family that has none (Prometheus's
    /// linter asks for one), from `RelayMetrics.helpTexts`.
    static func withHelp(_ exposition: String) -> String {
        var out = ""
        out.reserveCapacity(exposition.utf8.count + 1024)
        var previous: Substring = ""
        for line in exposition.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE "), !previous.hasPrefix("# HELP "),
               let name = line.dropFirst(7).split(separator: " ").first, let help = RelayMetrics.helpTexts[String(name)] {
                out += "# HELP \(name) \(help)\n"
            }
            out += line
            out += "\n"
            previous = line
        }
        return String(out.dropLast())
    }

}

/// Each subscription's health as gauges labelled with its id (subscriptions are few, and an
/// alert must say which one); a deleted subscription's series are removed.
final class SubscriptionGauges: Sendable {
    private let shown = Mutex<Set<String>>([])

    func show(_ health: [SubscriptionHealth], in registry: PrometheusCollectorRegistry) {
        for subscription in health {
            let labels = [("subscription", subscription.subscriptionID)]
            registry.makeGauge(descriptor: Self.enabled, labels: labels).set(subscription.enabled ? 1.0 : 0.0)
            registry.makeGauge(descriptor: Self.disabledAutomatically, labels: labels).set(subscription.disabledAutomatically ? 1.0 : 0.0)
            registry.makeGauge(descriptor: Self.failing, labels: labels).set(subscription.failingFor)
            registry.makeGauge(descriptor: Self.oldestDueAge, labels: labels).set(subscription.oldestDueAge)
        }
        let current = Set(health.map(\.subscriptionID))
        let gone = shown.withLock { shown in
            defer { shown = current }
            return shown.subtracting(current)
        }
        for id in gone {
            for descriptor in [Self.enabled, Self.disabledAutomatically, Self.failing, Self.oldestDueAge] {
                registry.unregisterGauge(registry.makeGauge(descriptor: descriptor, labels: [("subscription", id)]))
            }
        }
    }

    static var enabled: MetricNameDescriptor {
        .echorelay("subscription_enabled", unit: "", help: "1 while the subscription is enabled, 0 while it is disabled.")
    }
    static var disabledAutomatically: MetricNameDescriptor {
        .echorelay("subscription_auto_disabled", unit: "",
                   help: "1 when EchoRelay disabled the subscription itself: its endpoint answered 410, or every delivery failed for ECHORELAY_DISABLE_AFTER.")
    }
    static var failing: MetricNameDescriptor {
        .echorelay("subscription_failing", unit: "seconds",
                   help: "How long every attempt to the subscription has failed (since its first failure after its last success); 0 while it succeeds.")
    }
    static var oldestDueAge: MetricNameDescriptor {
        .echorelay("subscription_oldest_due_age", unit: "seconds",
                   help: "How long the subscription's longest-waiting due delivery has been due; 0 when none is due.")
    }
}

extension MetricNameDescriptor {
    /// A metric of EchoRelay's own: its name starts with `echorelay_`.
    static func echorelay(_ name: String, unit: String, help: String) -> Self {
        MetricNameDescriptor(namespace: "echorelay", metricName: name, unitName: unit, helpText: help)
    }
}
