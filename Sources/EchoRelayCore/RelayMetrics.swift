import CoreMetrics

/// Every counter and timer EchoRelay reports, named once here. Labels come from small fixed
/// sets (an event type, an outcome, a reason code), never an id, so the series stay few.
/// Without a factory they go nowhere, as in unit tests.
public struct RelayMetrics: Sendable {
    private let factory: any MetricsFactory
    // Made once, not per request or per delivery: every label of these is known up front
    // (and each series then shows from the first scrape, at 0).
    private let received: [String: Counter]
    private let deliveries: [String: Counter]
    private let attemptDuration: Timer
    private let replays: [String: Counter]

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.factory = factory
        var received: [String: Counter] = [:]
        for type in EventType.allCases.map(\.rawValue) + ["unknown"] {
            for result in IngestResult.allCases {
                received[type + "|" + result.rawValue] = Counter(
                    label: "echorelay_events_received_total", dimensions: [("type", type), ("result", result.rawValue)], factory: factory
                )
            }
        }
        self.received = received
        deliveries = Dictionary(uniqueKeysWithValues: ["delivered", "retry", "dead"].map { outcome in
            (outcome, Counter(label: "echorelay_deliveries_total", dimensions: [("outcome", outcome)], factory: factory))
        })
        attemptDuration = Timer(label: Self.deliveryAttemptDuration, dimensions: [], factory: factory)
        replays = Dictionary(uniqueKeysWithValues: ["event", "bulk"].map { kind in
            (kind, Counter(label: "echorelay_replays_total", dimensions: [("kind", kind)], factory: factory))
        })
    }

    /// What became of a `POST /v1/events`.
    public enum IngestResult: String, Sendable, CaseIterable {
        case accepted, duplicate, conflict, refused, failed
    }

    /// `type` is nil when the request was refused before its type was read.
    public func eventReceived(type: EventType?, result: IngestResult) {
        received[(type?.rawValue ?? "unknown") + "|" + result.rawValue]?.increment()
    }

    /// Once per event; the reasons are many, so these series are made as they first occur.
    public func verificationFinished(status: EventStatus, reason: String) {
        Counter(label: "echorelay_verification_outcomes_total",
                dimensions: [("outcome", status.rawValue), ("reason", reason)], factory: factory).increment()
    }

    /// One delivery attempt: `outcome` is delivered, retry or dead.
    public func deliveryAttempted(outcome: String, duration: Duration) {
        deliveries[outcome]?.increment()
        attemptDuration.recordNanoseconds(duration.nanoseconds)
    }

    /// A replay was asked for: `kind` is event (one event) or bulk.
    public func replayRequested(kind: String) {
        replays[kind]?.increment()
    }

    public static let deliveryAttemptDuration = "echorelay_delivery_attempt_duration_seconds"
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
