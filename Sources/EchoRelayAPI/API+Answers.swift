extension API {
    /// `POST /v1/events` (schema `IngestAcknowledgement`): stored, or received before.
    public struct IngestAcknowledgement: Codable, Sendable, Equatable {
        public var id: String
        /// The user's events counted from 1 with no gaps.
        public var sequence: Int64
        /// Always `accepted`.
        public var status: String

        public init(id: String, sequence: Int64, status: String = "accepted") {
            self.id = id
            self.sequence = sequence
            self.status = status
        }
    }

    /// A dry run's count (schema `DryRunCount`): a bulk replay, a recovery or a redrive asked
    /// only to count. Nothing changed.
    public struct DryRunCount: Codable, Sendable, Equatable {
        public var matched: Int
        public var dry_run: Bool

        public init(matched: Int, dry_run: Bool = true) {
            self.matched = matched
            self.dry_run = dry_run
        }
    }

    /// `POST /v1/events/{id}/reverify` (schema `ReverifyAccepted`): the event is pending again.
    public struct ReverifyAccepted: Codable, Sendable, Equatable {
        public var id: String
        /// Always `pending`.
        public var status: String

        public init(id: String, status: String = "pending") {
            self.id = id
            self.status = status
        }
    }

    /// `GET /healthz` and `GET /readyz` when they pass (schema `Health`): `ok` or `ready`.
    public struct Health: Codable, Sendable, Equatable {
        public var status: String

        public init(status: String) {
            self.status = status
        }
    }

    /// `GET /readyz` when the database is away or behind (schema `NotReady`).
    public struct NotReady: Codable, Sendable, Equatable {
        /// Always `not ready`.
        public var status: String
        public var reason: String

        public init(reason: String) {
            self.status = "not ready"
            self.reason = reason
        }
    }

    /// An RFC 8935 error answered to a SET transmitter (schema `SetError`).
    public struct SetError: Codable, Sendable, Equatable {
        public var err: String
        public var description: String

        public init(err: String, description: String) {
            self.err = err
            self.description = description
        }
    }
}
