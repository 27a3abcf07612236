extension API {
    /// A subscription (schemas `Subscription` and, with its signing secret once at creation and
    /// rotation, `SubscriptionWithSecret`).
    public struct Subscription: Codable, Sendable, Equatable {
        public var id: String
        public var url: String
        public var event_types: [String]
        @Nullable public var description: String?
        public var ordered: Bool
        public var enabled: Bool
        @Nullable public var disabled_reason: String?
        public var created_at: String
        public var updated_at: String
        @Nullable public var last_success_at: String?
        @Nullable public var failing_since: String?
        /// Only when it was just made: left out otherwise.
        public var secret: String?

        public init(id: String, url: String, event_types: [String], description: String?, ordered: Bool, enabled: Bool,
                    disabled_reason: String?, created_at: String, updated_at: String, last_success_at: String?,
                    failing_since: String?, secret: String?) {
            self.id = id
            self.url = url
            self.event_types = event_types
            self.description = description
            self.ordered = ordered
            self.enabled = enabled
            self.disabled_reason = disabled_reason
            self.created_at = created_at
            self.updated_at = updated_at
            self.last_success_at = last_success_at
            self.failing_since = failing_since
            self.secret = secret
        }
    }

    /// Every error answer (RFC 9457 `application/problem+json`; schema `Problem`).
    public struct Problem: Codable, Sendable, Equatable {
        /// `urn:echorelay:problem:<slug>`.
        public var type: String
        public var title: String
        public var status: Int
        public var detail: String?
        /// Each refused field, named by its dotted path; left out when there are none.
        public var errors: [FieldProblem]?

        public init(type: String, title: String, status: Int, detail: String?, errors: [FieldProblem]?) {
            self.type = type
            self.title = title
            self.status = status
            self.detail = detail
            self.errors = errors
        }
    }

    public struct FieldProblem: Codable, Sendable, Equatable {
        public var field: String
        public var reason: String

        public init(field: String, reason: String) {
            self.field = field
            self.reason = reason
        }
    }
}
