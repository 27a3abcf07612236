import CoreMetrics

/// Every counter and timer EchoRelay reports, named once here. Labels come from small fixed
/// sets (an event type, an outcome, a reason code), never an id, so the series stay few.
/// Without a factory they go nowhere, as in unit tests.
public struct RelayMetrics: Sendable {
    private let factory: any MetricsFactory

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.factory = factory
    }

    /// What became of a `POST /v1/events`.
    public enum IngestResult: String, Sendable {
        case accepted, duplicate, conflict, refused, failed
    }

    /// `type` is nil when the request was refused before its type was read.
    public func eventReceived(type: EventType?, result: IngestResult) {
        Counter(label: "echorelay_events_received_total",
                dimensions: [("type", type?.rawValue ?? "unknown"), ("result", result.rawValue)], factory: factory).increment()
    }

    public func verificationFinished(status: EventStatus, reason: String) {
        Counter(label: "echorelay_verification_outcomes_total",
                dimensions: [("outcome", status.rawValue), ("reason", reason)], factory: factory).increment()
    }

    /// One delivery attempt: `outcome` is delivered, retry or dead.
    public func deliveryAttempted(outcome: String, duration: Duration) {
        Counter(label: "echorelay_deliveries_total", dimensions: [("outcome", outcome)], factory: factory).increment()
        Timer(label: Self.deliveryAttemptDuration, dimensions: [], factory: factory).recordNanoseconds(duration.nanoseconds)
    }

    /// A replay was asked for: `kind` is event (one event) or bulk.
    public func replayRequested(kind: String) {
        Counter(label: "echorelay_replays_total", dimensions: [("kind", kind)], factory: factory).increment()
    }

    public static let deliveryAttemptDuration = "echorelay_delivery_attempt_duration_seconds"
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
