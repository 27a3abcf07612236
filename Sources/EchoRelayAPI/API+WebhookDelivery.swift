extension API {
    /// `GET /v1/deliveries/{webhook_id}` (schema `WebhookDelivery`): what was sent with one
    /// `webhook-id` — its event, its subscription, and each delivery that carried it (the
    /// original and its replays) with every attempt.
    public struct WebhookDelivery: Codable, Sendable, Equatable {
        public var webhook_id: String
        public var event: DeliveredEvent
        public var subscription_id: String
        /// Null when the subscription has been deleted since.
        @Nullable public var subscription: Subscription?
        public var deliveries: [Delivery]

        public init(webhook_id: String, event: DeliveredEvent, subscription_id: String, subscription: Subscription?,
                    deliveries: [Delivery]) {
            self.webhook_id = webhook_id
            self.event = event
            self.subscription_id = subscription_id
            self.subscription = subscription
            self.deliveries = deliveries
        }
    }

    /// The event a delivery carried, as its subscriber saw it: no other subscription's
    /// deliveries, no provider answer (schema `DeliveredEvent`).
    public struct DeliveredEvent: Codable, Sendable, Equatable {
        public var id: String
        public var type: String
        public var user_id: String
        public var sequence: Int64
        public var status: String
        @Nullable public var reason: String?
        public var occurred_at: String
        public var received_at: String
        @Nullable public var verified_at: String?

        public init(id: String, type: String, user_id: String, sequence: Int64, status: String, reason: String?,
                    occurred_at: String, received_at: String, verified_at: String?) {
            self.id = id
            self.type = type
            self.user_id = user_id
            self.sequence = sequence
            self.status = status
            self.reason = reason
            self.occurred_at = occurred_at
            self.received_at = received_at
            self.verified_at = verified_at
        }
    }
}
