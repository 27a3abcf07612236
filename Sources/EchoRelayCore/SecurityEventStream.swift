import Foundation

/// The Shared Signals stream EchoRelay registered with its transmitter (`echorelay sets
/// stream create`), as the store keeps it: one at most.
public struct SecurityEventStream: Sendable, Equatable {
    public enum Delivery: String, Sendable, Codable, CaseIterable {
        /// RFC 8935: the transmitter pushes to `POST /v1/sets`.
        case push
        /// RFC 8936: EchoRelay polls the transmitter's endpoint.
        case poll

        /// The SSF delivery method URN.
        public var method: String {
            switch self {
            case .push: "urn:ietf:rfc:8935"
            case .poll: "urn:ietf:rfc:8936"
            }
        }

        public init?(method: String) {
            guard let found = Self.allCases.first(where: { $0.method == method }) else { return nil }
            self = found
        }
    }

    /// The transmitter's status of the stream (SSF 1.0 §8.1.2).
    public enum Status: String, Sendable, Codable, CaseIterable {
        case enabled, paused, disabled
    }

    /// What the last `verify` saw (SSF 1.0 §8.1.4).
    public struct Verification: Sendable, Equatable {
        public enum Outcome: String, Sendable, Codable, CaseIterable {
            /// The verification event arrived with the state asked for.
            case passed
            /// A verification event arrived with another state.
            case wrongState = "wrong_state"
            /// A verification event arrived without a state.
            case missingState = "missing_state"
            /// None arrived in time.
            case timedOut = "timed_out"
        }

        public var state: String
        public var requestedAt: Date
        public var outcome: Outcome
        /// From the request to the event's arrival.
        public var elapsed: Duration?

        public init(state: String, requestedAt: Date, outcome: Outcome, elapsed: Duration?) {
            self.state = state
            self.requestedAt = requestedAt
            self.outcome = outcome
            self.elapsed = elapsed
        }
    }

    public var streamID: String
    public var delivery: Delivery
    /// Where SETs go: the transmitter's poll endpoint, or EchoRelay's own `/v1/sets` for push.
    public var endpointURL: String
    /// The transmitter's stream configuration as it last answered, compact JSON.
    public var configuration: String
    public var status: Status?
    public var statusReason: String?
    public var statusCheckedAt: Date?
    public var verification: Verification?
    public var createdAt: Date
    public var updatedAt: Date

    public init(streamID: String, delivery: Delivery, endpointURL: String, configuration: String, status: Status? = nil,
                statusReason: String? = nil, statusCheckedAt: Date? = nil, verification: Verification? = nil,
                createdAt: Date = Date(), updatedAt: Date = Date()) {
        self.streamID = streamID
        self.delivery = delivery
        self.endpointURL = endpointURL
        self.configuration = configuration
        self.status = status
        self.statusReason = statusReason
        self.statusCheckedAt = statusCheckedAt
        self.verification = verification
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

extension SecurityEventStream {
    public init(row: some StoreRow) throws {
        let verification: Verification? = if let state = try row.optionalString(7), let requestedAt = try row.optionalDate(8),
                                              let outcome = try row.optionalString(9).flatMap(Verification.Outcome.init(rawValue:)) {
            Verification(state: state, requestedAt: requestedAt, outcome: outcome,
                         elapsed: try row.optionalInt(10).map { .milliseconds($0) })
        } else {
            nil
        }
        self.init(
            streamID: try row.string(0), delivery: try row.value(1, "delivery of the Shared Signals stream"),
            endpointURL: try row.string(2), configuration: try row.string(3),
            status: try row.optionalString(4).flatMap(Status.init(rawValue:)), statusReason: try row.optionalString(5),
            statusCheckedAt: try row.optionalDate(6), verification: verification, createdAt: try row.date(11), updatedAt: try row.date(12)
        )
    }

    /// The elapsed time of a verification as the store keeps it.
    public static func milliseconds(_ duration: Duration?) -> Int64? {
        duration.map { $0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000 }
    }
}

/// Where the stream is kept.
public protocol SecurityEventStreamStore: Sendable {
    /// The registered stream, or nil.
    func securityEventStream() async throws -> SecurityEventStream?
    /// Keeps `stream` as the registered one, replacing any before it.
    func saveSecurityEventStream(_ stream: SecurityEventStream) async throws
    /// The newest verification event recorded after the one numbered `after` (nil: any), with
    /// its number and state: what `verify` waits for.
    func verificationEvent(after: Int64?) async throws -> (number: Int64, state: String?)?
    /// The number of the newest SET recorded, or nil when there is none.
    func newestSecurityEventNumber() async throws -> Int64?
}

/// One poller at a time: with several processes on one database, the one that holds this lock
/// polls the transmitter, so two processes never split a batch, and the lock is free again
/// the moment its holder dies.
public protocol SecurityEventPollerLock: Sendable {
    /// Runs `body` while this process holds the poller's lock, if it can take it now, and
    /// answers whether it could. `body` asks `stillHeld` before each poll: a lost connection
    /// loses the lock.
    func withPollerLock(_ body: @Sendable (_ stillHeld: @Sendable () async -> Bool) async throws -> Void) async throws -> Bool
}
