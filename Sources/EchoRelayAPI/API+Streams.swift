extension API {
    /// `GET /v1/sets/stream` (schema `SecurityEventStream`): the Shared Signals stream EchoRelay
    /// registered with its transmitter, its status and its last verification.
    public struct SecurityEventStream: Codable, Sendable, Equatable {
        public var stream_id: String
        /// `push` or `poll`.
        public var delivery: String
        /// Where SETs go: EchoRelay's `/v1/sets` (push) or the transmitter's poll endpoint (poll).
        public var endpoint_url: String
        /// `enabled`, `paused` or `disabled`, as the transmitter last said; null before it was asked.
        @Nullable public var status: String?
        @Nullable public var status_reason: String?
        @Nullable public var status_checked_at: String?
        public var events_requested: [String]
        public var events_delivered: [String]
        /// The transmitter's stream configuration as it last answered.
        public var configuration: JSON
        @Nullable public var verification: StreamVerification?
        public var created_at: String
        public var updated_at: String

        public init(stream_id: String, delivery: String, endpoint_url: String, status: String?, status_reason: String?,
                    status_checked_at: String?, events_requested: [String], events_delivered: [String], configuration: JSON,
                    verification: StreamVerification?, created_at: String, updated_at: String) {
            self.stream_id = stream_id
            self.delivery = delivery
            self.endpoint_url = endpoint_url
            self.status = status
            self.status_reason = status_reason
            self.status_checked_at = status_checked_at
            self.events_requested = events_requested
            self.events_delivered = events_delivered
            self.configuration = configuration
            self.verification = verification
            self.created_at = created_at
            self.updated_at = updated_at
        }
    }

    /// A verification of the stream (schema `StreamVerification`): the `state` asked for and
    /// what arrived. `outcome` is `passed`, `wrong_state`, `missing_state` or `timed_out`.
    public struct StreamVerification: Codable, Sendable, Equatable {
        public var state: String
        public var requested_at: String
        public var outcome: String
        /// From the request to the verification event's arrival; null when none arrived.
        @Nullable public var elapsed_ms: Int64?

        public init(state: String, requested_at: String, outcome: String, elapsed_ms: Int64?) {
            self.state = state
            self.requested_at = requested_at
            self.outcome = outcome
            self.elapsed_ms = elapsed_ms
        }
    }

    /// `POST /v1/sets/stream` (schema `StreamCreateRequest`).
    public struct StreamCreateRequest: Codable, Sendable, Equatable {
        /// `push` or `poll`.
        public var delivery: String
        /// For push: the public URL of EchoRelay's `POST /v1/sets`, which the transmitter pushes to.
        public var endpoint_url: String?
        public var description: String?

        public init(delivery: String, endpoint_url: String? = nil, description: String? = nil) {
            self.delivery = delivery
            self.endpoint_url = endpoint_url
            self.description = description
        }
    }

    /// `PATCH /v1/sets/stream` (schema `StreamUpdateRequest`): the members a receiver may change.
    public struct StreamUpdateRequest: Codable, Sendable, Equatable {
        public var events_requested: [String]?
        public var description: String?
        /// For push: a new URL of EchoRelay's `POST /v1/sets`.
        public var endpoint_url: String?

        public init(events_requested: [String]? = nil, description: String? = nil, endpoint_url: String? = nil) {
            self.events_requested = events_requested
            self.description = description
            self.endpoint_url = endpoint_url
        }
    }

    /// `POST /v1/sets/stream/status` (schema `StreamStatusRequest`).
    public struct StreamStatusRequest: Codable, Sendable, Equatable {
        /// `enabled`, `paused` or `disabled`.
        public var status: String
        public var reason: String?

        public init(status: String, reason: String? = nil) {
            self.status = status
            self.reason = reason
        }
    }

    /// `POST /v1/sets/stream/verify` (schema `StreamVerifyRequest`).
    public struct StreamVerifyRequest: Codable, Sendable, Equatable {
        /// How long to wait for the verification event, 1 to 25 (default 20).
        public var timeout_seconds: Int?

        public init(timeout_seconds: Int? = nil) {
            self.timeout_seconds = timeout_seconds
        }
    }
}
