import CoreMetrics

/// Every counter and timer EchoRelay reports, named once here. Labels come from small fixed
/// sets (an event type, an outcome, a reason code), never an id, so the series stay few.
/// Without a factory they go nowhere, as in unit tests.
public struct RelayMetrics: Sendable {
    private let factory: any MetricsFactory
    // Made once, not per request or per delivery: every label of these is known up front
    // (and each series then shows from the first scrape, at 0).
    /// By event type (nil: not read yet), then by result.
    private let received: [EventType?: [IngestResult: Counter]]
    private let deliveries: [String: Counter]
    private let deliveryErrors: [DeliveryErrorKind: Counter]
    private let attemptDuration: Timer
    private let replays: [ReplayKind: Counter]
    private let batchSizes: [CommitGroup: Recorder]
    private let backlog: Gauge
    private let securityEvents: [SecurityEventResult: Counter]
    /// By what was removed: events (to their receipt), deliveries, attempts, test deliveries.
    private let pruned: [String: Counter]
    /// By kind (bearer, console), then failed or throttled.
    private let authentications: [String: [String: Counter]]

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.factory = factory
        var received: [EventType?: [IngestResult: Counter]] = [:]
        for type in EventType.allCases.map(Optional.some) + [nil] {
            for result in IngestResult.allCases {
                received[type, default: [:]][result] = Counter(
                    label: "echorelay_events_received_total",
                    dimensions: [("type", type?.rawValue ?? "unknown"), ("result", result.rawValue)], factory: factory
                )
            }
        }
        self.received = received
        batchSizes = Dictionary(uniqueKeysWithValues: CommitGroup.allCases.map { group in
            (group, Recorder(label: Self.commitBatchSize, dimensions: [("group", group.rawValue)], aggregate: true, factory: factory))
        })
        deliveries = Dictionary(uniqueKeysWithValues: ["delivered", "retry", "dead"].map { outcome in
            (outcome, Counter(label: "echorelay_deliveries_total", dimensions: [("outcome", outcome)], factory: factory))
        })
        deliveryErrors = Dictionary(uniqueKeysWithValues: DeliveryErrorKind.allCases.map { kind in
            (kind, Counter(label: "echorelay_delivery_errors_total", dimensions: [("kind", kind.rawValue)], factory: factory))
        })
        attemptDuration = Timer(label: Self.deliveryAttemptDuration, dimensions: [], factory: factory)
        backlog = Gauge(label: Self.backlogEvents, dimensions: [], factory: factory)
        securityEvents = Dictionary(uniqueKeysWithValues: SecurityEventResult.allCases.map { result in
            (result, Counter(label: "echorelay_security_events_received_total", dimensions: [("result", result.rawValue)], factory: factory))
        })
        pruned = Dictionary(uniqueKeysWithValues: PruneCounts.names.map { what in
            (what, Counter(label: "echorelay_pruned_total", dimensions: [("what", what)], factory: factory))
        })
        authentications = Dictionary(uniqueKeysWithValues: ["bearer", "console"].map { kind in
            (kind, Dictionary(uniqueKeysWithValues: ["failed", "throttled"].map { result in
                (result, Counter(label: Self.authentications, dimensions: [("kind", kind), ("result", result)], factory: factory))
            }))
        })
        replays = Dictionary(uniqueKeysWithValues: ReplayKind.allCases.map { kind in
            (kind, Counter(label: "echorelay_replays_total", dimensions: [("kind", kind.rawValue)], factory: factory))
        })
    }

    /// What became of a `POST /v1/events`.
    public enum IngestResult: String, Sendable, CaseIterable {
        case accepted, duplicate, conflict, refused, failed
        /// Answered 503 because the backlog was past `ECHORELAY_BACKLOG_LIMIT`.
        case overloaded
    }

    /// `type` is nil when the request was refused before its type was read.
    public func eventReceived(type: EventType?, result: IngestResult) {
        received[type]?[result]?.increment()
    }

    /// What became of a `POST /v1/sets`: recorded as what it became, or not.
    public enum SecurityEventResult: String, Sendable, CaseIterable {
        case event, verification, noted, ignored, unmatched, duplicate
        /// Refused: unauthenticated, or an invalid SET (400).
        case refused
        case overloaded, failed
    }

    /// What a round of retention pruning removed.
    public func pruned(_ counts: PruneCounts) {
        for (what, count) in counts.named where count > 0 {
            pruned[what]?.increment(by: count)
        }
    }

    public func securityEventReceived(_ result: SecurityEventResult) {
        securityEvents[result]?.increment()
    }

    // The poller's series exist only in the process that polls, so that the others' do not
    // read as a poller that is well (the alert takes the maximum age).

    /// SETs a poll's answer held.
    public func securityEventsPolled(_ count: Int) {
        Counter(label: "echorelay_set_polled_total", dimensions: [], factory: factory).increment(by: count)
    }

    /// SETs acknowledged to the transmitter, in a poll it answered.
    public func securityEventsAcknowledged(_ count: Int) {
        Counter(label: "echorelay_set_poll_acknowledged_total", dimensions: [], factory: factory).increment(by: count)
    }

    /// A polled SET that failed a check and went back in `setErrs`.
    public func securityEventsRefusedByPoll() {
        Counter(label: "echorelay_set_poll_refused_total", dimensions: [], factory: factory).increment()
    }

    /// A poll that failed: `kind` is connection, timeout, status or malformed.
    public func securityEventPollFailed(kind: String) {
        Counter(label: "echorelay_set_poll_errors_total", dimensions: [("kind", kind)], factory: factory).increment()
    }

    /// How long ago a poll last succeeded (since polling began, before the first).
    public func securityEventPollAge(_ age: Duration) {
        Gauge(label: "echorelay_set_poll_last_success_age_seconds", dimensions: [], factory: factory)
            .record(Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18)
    }

    /// The outcome of the stream's last verification: 1 for it, 0 for the others.
    public func securityEventStreamVerification(_ outcome: String) {
        for each in ["passed", "wrong_state", "missing_state", "timed_out"] {
            Gauge(label: "echorelay_set_stream_verification", dimensions: [("outcome", each)], factory: factory).record(each == outcome ? 1 : 0)
        }
    }

    /// The registered stream's status as the transmitter last gave it: 1 for it, 0 for the others.
    public func securityEventStreamStatus(_ status: String?) {
        for each in ["enabled", "paused", "disabled"] {
            Gauge(label: "echorelay_set_stream_status", dimensions: [("status", each)], factory: factory).record(each == status ? 1 : 0)
        }
    }

    /// The writes that share commits (group commit), one batch-size histogram each.
    public enum CommitGroup: String, Sendable, CaseIterable {
        case ingest, verification, attempt
    }

    /// One commit of `group` carried `size` requests.
    public func batchCommitted(_ group: CommitGroup, size: Int) {
        batchSizes[group]?.record(size)
    }

    /// Once per event; the reasons are many, so these series are made as they first occur.
    public func verificationFinished(status: EventStatus, reason: String) {
        Counter(label: "echorelay_verification_outcomes_total",
                dimensions: [("outcome", status.rawValue), ("reason", reason)], factory: factory).increment()
    }

    /// One delivery attempt: `outcome` is delivered, retry or dead.
    public func deliveryAttempted(outcome: String, duration: Duration, errorKind: DeliveryErrorKind?) {
        deliveries[outcome]?.increment()
        if let errorKind { deliveryErrors[errorKind]?.increment() }
        attemptDuration.recordNanoseconds(duration.nanoseconds)
    }

    /// A bearer token (`kind` bearer) or console sign-in (`console`) that was not valid.
    public func authenticationFailed(kind: String) {
        authentications[kind]?["failed"]?.increment()
    }

    /// An attempt answered `429` unseen: its address failed too often in the last minute.
    public func authenticationThrottled(kind: String) {
        authentications[kind]?["throttled"]?.increment()
    }

    /// A replay was asked for: `kind` is event (one event) or bulk.
    public func replayRequested(kind: ReplayKind) {
        replays[kind]?.increment()
    }

    /// The last reading of the backlog (events received and not yet final), counted up to
    /// twice the limit.
    public func backlogSampled(_ count: Int) {
        backlog.record(count)
    }

    /// What each series means, for the exposition's `# HELP` lines (metrics made through
    /// swift-metrics carry none of their own).
    public static let helpTexts: [String: String] = [
        "echorelay_events_received_total": "Events pushed to POST /v1/events, by type and by what became of them.",
        "echorelay_security_events_received_total": "Security Event Tokens pushed to POST /v1/sets, by what became of them.",
        "echorelay_verification_outcomes_total": "Events whose verification (OAuth Echo, OAuth 2 or a SET's signature) ended, by outcome and reason.",
        "echorelay_deliveries_total": "Delivery attempts, by what followed: delivered, retry or dead.",
        "echorelay_delivery_errors_total": "Failed delivery attempts, by kind: connection_refused, connect_timeout, timeout, reset, connect, dns, tls, status (an answer that was not 2xx), refused_address, other.",
        deliveryAttemptDuration: "How long each delivery attempt took, from sending to the subscriber's answer.",
        "echorelay_pruned_total": "Rows retention removed: events cut to their receipt, deliveries, attempts, test deliveries.",
        "echorelay_replays_total": "Replays asked for: of one event, in bulk, or a subscription's recover.",
        commitBatchSize: "Requests each shared commit carried, by group.",
        authentications: "Authentications that failed (an unknown or revoked bearer token, a refused console sign-in) or were refused with 429 unseen (too many failures from the address), by kind: bearer or console.",
        backlogEvents: "Events received and not yet final for every subscription (the backlog ECHORELAY_BACKLOG_LIMIT bounds).",
    ]

    public static let backlogEvents = "echorelay_backlog_events"
    public static let authentications = "echorelay_authentication_failures_total"
    public static let deliveryAttemptDuration = "echorelay_delivery_attempt_duration_seconds"
    public static let commitBatchSize = "echorelay_commit_batch_size"
    /// Powers of two up to the largest batch a commit takes.
    public static let commitBatchSizeBuckets: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256]
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
