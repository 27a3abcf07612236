extension API {
    /// `GET /v1/subscriptions` (schema `SubscriptionList`).
    public struct SubscriptionList: Codable, Sendable, Equatable {
        public var subscriptions: [Subscription]
        /// The next page's cursor; null on the last page.
        @Nullable public var next_cursor: String?

        public init(subscriptions: [Subscription], next_cursor: String?) {
            self.subscriptions = subscriptions
            self.next_cursor = next_cursor
        }
    }

    /// `GET /v1/subscriptions/{id}/deliveries` (schema `SubscriptionDeliveryList`).
    public struct SubscriptionDeliveryList: Codable, Sendable, Equatable {
        public var deliveries: [SubscriptionDelivery]
        /// The next page's cursor; null on the last page.
        @Nullable public var next_cursor: String?

        public init(deliveries: [SubscriptionDelivery], next_cursor: String?) {
            self.deliveries = deliveries
            self.next_cursor = next_cursor
        }
    }

    /// `GET /v1/users/{user_id}/events` and `GET /v1/events` (schema `Timeline`).
    public struct Timeline: Codable, Sendable, Equatable {
        public var events: [TimelineEvent]
        /// The next page's cursor; null on the last page.
        @Nullable public var next_cursor: String?

        public init(events: [TimelineEvent], next_cursor: String?) {
            self.events = events
            self.next_cursor = next_cursor
        }
    }

    /// `GET /v1/dead-letters` (schema `DeadLetterList`).
    public struct DeadLetterList: Codable, Sendable, Equatable {
        public var dead_letters: [DeadLetter]
        /// The next page's cursor; null on the last page.
        @Nullable public var next_cursor: String?

        public init(dead_letters: [DeadLetter], next_cursor: String?) {
            self.dead_letters = dead_letters
            self.next_cursor = next_cursor
        }
    }

    /// `GET /v1/sets` (schema `SecurityEventList`).
    public struct SecurityEventList: Codable, Sendable, Equatable {
        public var security_events: [SecurityEvent]
        /// The next page's cursor; null on the last page.
        @Nullable public var next_cursor: String?

        public init(security_events: [SecurityEvent], next_cursor: String?) {
            self.security_events = security_events
            self.next_cursor = next_cursor
        }
    }

    /// `GET /v1/audit` (schema `AuditList`).
    public struct AuditList: Codable, Sendable, Equatable {
        public var entries: [AuditEntry]
        /// The next page's cursor; null on the last page.
        @Nullable public var next_cursor: String?

        public init(entries: [AuditEntry], next_cursor: String?) {
            self.entries = entries
            self.next_cursor = next_cursor
        }
    }
}
