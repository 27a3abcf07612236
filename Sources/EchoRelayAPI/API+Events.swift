extension API {
    /// `GET /v1/events/{id}` (schema `Event`): a stored event, its outcome and every delivery.
    public struct Event: Codable, Sendable, Equatable {
        public var id: String
        public var type: String
        public var user_id: String
        public var sequence: Int64
        public var status: String
        @Nullable public var reason: String?
        public var occurred_at: String
        public var received_at: String
        @Nullable public var decided_at: String?
        @Nullable public var verified_at: String?
        /// What the provider answered: the values subscribers are sent; null before an answer.
        @Nullable public var provider: ProviderValues?
        /// `push` or `set`.
        public var source: String
        /// How the provider confirmed it: `echo`, `oauth2` or `set`.
        public var path: String
        /// The Security Event Token it came as, for `source` `set`.
        @Nullable public var security_event: SecurityEventOrigin?
        /// When retention cut the event to its receipt (its deliveries are gone); null while kept whole.
        @Nullable public var pruned_at: String?
        /// Why the session ended, when a Shared Signals event said so (`session_revoked`, `tokens_revoked`).
        @Nullable public var session_reason: String?
        public var deliveries: [Delivery]

        public init(id: String, type: String, user_id: String, sequence: Int64, status: String, reason: String?,
                    occurred_at: String, received_at: String, decided_at: String?, verified_at: String?,
                    provider: ProviderValues?, source: String, path: String = "echo", security_event: SecurityEventOrigin?,
                    pruned_at: String? = nil, session_reason: String? = nil, deliveries: [Delivery]) {
            self.path = path
            self.session_reason = session_reason
            self.pruned_at = pruned_at
            self.id = id
            self.type = type
            self.user_id = user_id
            self.sequence = sequence
            self.status = status
            self.reason = reason
            self.occurred_at = occurred_at
            self.received_at = received_at
            self.decided_at = decided_at
            self.verified_at = verified_at
            self.provider = provider
            self.source = source
            self.security_event = security_event
            self.deliveries = deliveries
        }
    }

    /// Members the provider did not answer are left out, not null.
    public struct ProviderValues: Codable, Sendable, Equatable {
        public var user_id: String?
        public var phone_number: String?

        public init(user_id: String?, phone_number: String?) {
            self.user_id = user_id
            self.phone_number = phone_number
        }
    }

    public struct SecurityEventOrigin: Codable, Sendable, Equatable {
        public var issuer: String
        public var jti: String
        public var event_type: String

        public init(issuer: String, jti: String, event_type: String) {
            self.issuer = issuer
            self.jti = jti
            self.event_type = event_type
        }
    }

    /// One delivery of an event (schema `Delivery`), with every attempt.
    public struct Delivery: Codable, Sendable, Equatable {
        public var subscription_id: String
        @Nullable public var replay_id: String?
        public var webhook_id: String
        public var status: String
        public var created_at: String
        @Nullable public var finished_at: String?
        @Nullable public var next_attempt_at: String?
        public var attempts: [DeliveryAttempt]

        public init(subscription_id: String, replay_id: String?, webhook_id: String, status: String, created_at: String,
                    finished_at: String?, next_attempt_at: String?, attempts: [DeliveryAttempt]) {
            self.subscription_id = subscription_id
            self.replay_id = replay_id
            self.webhook_id = webhook_id
            self.status = status
            self.created_at = created_at
            self.finished_at = finished_at
            self.next_attempt_at = next_attempt_at
            self.attempts = attempts
        }
    }

    /// One try of a delivery (schema `DeliveryAttempt`).
    public struct DeliveryAttempt: Codable, Sendable, Equatable {
        public var started_at: String
        public var duration_ms: Int
        /// Null when no answer came.
        @Nullable public var status_code: Int?
        @Nullable public var error_kind: String?
        @Nullable public var error: String?
        /// The start of the subscriber's answer.
        @Nullable public var response_head: String?

        public init(started_at: String, duration_ms: Int, status_code: Int?, error_kind: String?, error: String?,
                    response_head: String?) {
            self.started_at = started_at
            self.duration_ms = duration_ms
            self.status_code = status_code
            self.error_kind = error_kind
            self.error = error
            self.response_head = response_head
        }
    }

    /// One event of a list (`GET /v1/users/{user_id}/events`, `GET /v1/events`; schema
    /// `TimelineEvent`), with counts of its deliveries.
    public struct TimelineEvent: Codable, Sendable, Equatable {
        public var id: String
        public var type: String
        public var user_id: String
        public var sequence: Int64
        public var status: String
        @Nullable public var reason: String?
        public var occurred_at: String
        public var received_at: String
        @Nullable public var decided_at: String?
        @Nullable public var verified_at: String?
        /// When retention cut the event to its receipt; null while kept whole.
        @Nullable public var pruned_at: String?
        /// Why the session ended, when a Shared Signals event said so (`session_revoked`, `tokens_revoked`).
        @Nullable public var session_reason: String?
        public var deliveries: DeliveryCounts

        public init(id: String, type: String, user_id: String, sequence: Int64, status: String, reason: String?,
                    occurred_at: String, received_at: String, decided_at: String?, verified_at: String?,
                    pruned_at: String? = nil, session_reason: String? = nil, deliveries: DeliveryCounts) {
            self.pruned_at = pruned_at
            self.session_reason = session_reason
            self.id = id
            self.type = type
            self.user_id = user_id
            self.sequence = sequence
            self.status = status
            self.reason = reason
            self.occurred_at = occurred_at
            self.received_at = received_at
            self.decided_at = decided_at
            self.verified_at = verified_at
            self.deliveries = deliveries
        }
    }

    public struct DeliveryCounts: Codable, Sendable, Equatable {
        public var total: Int
        public var pending: Int
        public var delivered: Int
        public var dead: Int
        public var cancelled: Int
        public var replays: Int

        public init(total: Int, pending: Int, delivered: Int, dead: Int, cancelled: Int, replays: Int) {
            self.total = total
            self.pending = pending
            self.delivered = delivered
            self.dead = dead
            self.cancelled = cancelled
            self.replays = replays
        }
    }

    /// `GET /v1/users/{user_id}` (schema `User`): a user's current verified state.
    public struct User: Codable, Sendable, Equatable {
        public var user_id: String
        /// `active` or `deactivated`.
        public var state: String
        /// Null when unknown.
        @Nullable public var phone_number: String?
        public var last_sequence: Int64
        public var last_event_at: String
        public var updated_at: String

        public init(user_id: String, state: String, phone_number: String?, last_sequence: Int64, last_event_at: String,
                    updated_at: String) {
            self.user_id = user_id
            self.state = state
            self.phone_number = phone_number
            self.last_sequence = last_sequence
            self.last_event_at = last_event_at
            self.updated_at = updated_at
        }
    }
}

extension API {
    /// One delivery that ran out of tries (`GET /v1/dead-letters`; schema `DeadLetter`).
    public struct DeadLetter: Codable, Sendable, Equatable {
        public var event_id: String
        public var subscription_id: String
        @Nullable public var replay_id: String?
        public var user_id: String
        public var type: String
        public var sequence: Int64
        public var webhook_id: String
        public var attempts: Int
        public var received_at: String
        public var dead_at: String
        @Nullable public var last_status_code: Int?
        @Nullable public var last_error: String?

        public init(event_id: String, subscription_id: String, replay_id: String?, user_id: String, type: String, sequence: Int64,
                    webhook_id: String, attempts: Int, received_at: String, dead_at: String, last_status_code: Int?,
                    last_error: String?) {
            self.event_id = event_id
            self.subscription_id = subscription_id
            self.replay_id = replay_id
            self.user_id = user_id
            self.type = type
            self.sequence = sequence
            self.webhook_id = webhook_id
            self.attempts = attempts
            self.received_at = received_at
            self.dead_at = dead_at
            self.last_status_code = last_status_code
            self.last_error = last_error
        }
    }

    /// `POST /v1/events/{id}/replay` (schema `ReplayReceipt`): the replay made, and where it goes.
    public struct ReplayReceipt: Codable, Sendable, Equatable {
        public var id: String
        public var event_id: String
        public var matched: Int
        public var subscription_ids: [String]

        public init(id: String, event_id: String, matched: Int, subscription_ids: [String]) {
            self.id = id
            self.event_id = event_id
            self.matched = matched
            self.subscription_ids = subscription_ids
        }
    }
}

extension API {
    /// One of a subscription's deliveries, as its own list shows it (schema
    /// `SubscriptionDelivery`); its attempts are listed on their own.
    public struct SubscriptionDelivery: Codable, Sendable, Equatable {
        /// The delivery's id: the cursor of its list, and the path of its attempts.
        public var id: Int64
        public var event_id: String
        public var user_id: String
        public var type: String
        public var sequence: Int64
        @Nullable public var replay_id: String?
        public var webhook_id: String
        public var status: String
        /// Tries started so far.
        public var attempts: Int
        public var created_at: String
        @Nullable public var finished_at: String?
        @Nullable public var next_attempt_at: String?
        /// The last attempt's HTTP status; null before any attempt or when none answered.
        @Nullable public var last_status_code: Int?

        public init(id: Int64, event_id: String, user_id: String, type: String, sequence: Int64, replay_id: String?,
                    webhook_id: String, status: String, attempts: Int, created_at: String, finished_at: String?,
                    next_attempt_at: String?, last_status_code: Int?) {
            self.id = id
            self.event_id = event_id
            self.user_id = user_id
            self.type = type
            self.sequence = sequence
            self.replay_id = replay_id
            self.webhook_id = webhook_id
            self.status = status
            self.attempts = attempts
            self.created_at = created_at
            self.finished_at = finished_at
            self.next_attempt_at = next_attempt_at
            self.last_status_code = last_status_code
        }
    }

    /// A delivery's attempts, oldest first (schema `DeliveryAttemptList`).
    public struct DeliveryAttemptList: Codable, Sendable, Equatable {
        public var attempts: [DeliveryAttempt]

        public init(attempts: [DeliveryAttempt]) {
            self.attempts = attempts
        }
    }
}

extension API {
    /// What a test delivery did (schema `TestDeliveryResult`).
    public struct TestDeliveryResult: Codable, Sendable, Equatable {
        /// The test's own `webhook-id`, fresh each time.
        public var webhook_id: String
        /// True when the subscriber answered 2xx.
        public var delivered: Bool
        public var attempt: DeliveryAttempt

        public init(webhook_id: String, delivered: Bool, attempt: DeliveryAttempt) {
            self.webhook_id = webhook_id
            self.delivered = delivered
            self.attempt = attempt
        }
    }
}
