extension API {
    /// A subscription (schemas `Subscription` and, with its signing secret once at creation and
    /// rotation, `SubscriptionWithSecret`).
    public struct Subscription: Codable, Sendable, Equatable, CustomReflectable {
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

        /// Printed, the signing secret shows as redacted.
        public var customMirror: Mirror {
            Mirror(self, children: [
                "id": id, "url": url, "event_types": event_types, "ordered": ordered, "enabled": enabled,
                "secret": secret == nil ? "nil" : "<redacted>",
            ], displayStyle: .struct)
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

extension API {
    /// A replay (schema `Replay`): one event's, or a bulk replay worked through as a job.
    public struct Replay: Codable, Sendable, Equatable {
        public var id: String
        /// `event`, `bulk` or `recover`.
        public var kind: String
        public var state: String
        public var reason: String
        public var actor: Actor
        @Nullable public var event_id: String?
        /// A bulk replay's filter: only the fields set; null for one event's.
        @Nullable public var filter: JSON?
        public var matched: Int
        public var sent: Int
        public var delivered: Int
        public var failed: Int
        public var created_at: String
        @Nullable public var finished_at: String?

        public init(id: String, kind: String, state: String, reason: String, actor: Actor, event_id: String?, filter: JSON?,
                    matched: Int, sent: Int, delivered: Int, failed: Int, created_at: String, finished_at: String?) {
            self.id = id
            self.kind = kind
            self.state = state
            self.reason = reason
            self.actor = actor
            self.event_id = event_id
            self.filter = filter
            self.matched = matched
            self.sent = sent
            self.delivered = delivered
            self.failed = failed
            self.created_at = created_at
            self.finished_at = finished_at
        }

        public struct Actor: Codable, Sendable, Equatable {
            public var name: String
            public var role: String

            public init(name: String, role: String) {
                self.name = name
                self.role = role
            }
        }
    }

    /// One entry of the audit log (`GET /v1/audit`; schema `AuditEntry`).
    public struct AuditEntry: Codable, Sendable, Equatable {
        public var id: Int64
        public var at: String
        public var actor: Actor
        /// Such as `event.replay`, `replay.start`, `dead_letters.redrive`.
        public var action: String
        @Nullable public var target: String?
        @Nullable public var filter: JSON?
        @Nullable public var matched: Int?
        @Nullable public var reason: String?

        public init(id: Int64, at: String, actor: Actor, action: String, target: String?, filter: JSON?, matched: Int?,
                    reason: String?) {
            self.id = id
            self.at = at
            self.actor = actor
            self.action = action
            self.target = target
            self.filter = filter
            self.matched = matched
            self.reason = reason
        }

        public struct Actor: Codable, Sendable, Equatable {
            public var name: String
            public var role: String
            /// Null for `ECHORELAY_ADMIN_TOKEN` and the command line.
            @Nullable public var token_id: String?

            public init(name: String, role: String, token_id: String?) {
                self.name = name
                self.role = role
                self.token_id = token_id
            }
        }
    }

    /// A received Security Event Token (`GET /v1/sets`; schema `SecurityEvent`).
    public struct SecurityEvent: Codable, Sendable, Equatable {
        public var issuer: String
        public var jti: String
        public var event_type: String
        public var issued_at: String
        public var received_at: String
        /// The subject as the transmitter sent it, or null.
        @Nullable public var subject: JSON?
        /// What it became: `event`, `verification`, `ignored`, …
        public var disposition: String
        @Nullable public var note: String?
        @Nullable public var verification_state: String?
        @Nullable public var event_id: String?

        public init(issuer: String, jti: String, event_type: String, issued_at: String, received_at: String, subject: JSON?,
                    disposition: String, note: String?, verification_state: String?, event_id: String?) {
            self.issuer = issuer
            self.jti = jti
            self.event_type = event_type
            self.issued_at = issued_at
            self.received_at = received_at
            self.subject = subject
            self.disposition = disposition
            self.note = note
            self.verification_state = verification_state
            self.event_id = event_id
        }
    }
}
