// The request bodies the CLI sends. The handlers read theirs field by field instead (so that
// every refusal names its field and reason), and the test holds both to the same schemas.
// A member left nil is left out.

extension API {
    /// `POST /v1/events/{id}/replay` (schema `ReplayEventRequest`).
    public struct ReplayEventRequest: Codable, Sendable, Equatable {
        public var reason: String
        public var subscription_ids: [String]?

        public init(reason: String, subscription_ids: [String]?) {
            self.reason = reason
            self.subscription_ids = subscription_ids
        }
    }

    /// `POST /v1/replays` (schema `BulkReplayRequest`).
    public struct BulkReplayRequest: Codable, Sendable, Equatable {
        public var reason: String
        public var user_id: String?
        public var subscription_id: String?
        public var types: [String]?
        public var since: String?
        public var until: String?
        public var status: String?
        public var dry_run: Bool?

        public init(reason: String, user_id: String?, subscription_id: String?, types: [String]?, since: String?, until: String?,
                    status: String?, dry_run: Bool?) {
            self.reason = reason
            self.user_id = user_id
            self.subscription_id = subscription_id
            self.types = types
            self.since = since
            self.until = until
            self.status = status
            self.dry_run = dry_run
        }
    }

    /// `POST /v1/subscriptions/{id}/recover` (schema `RecoverRequest`).
    public struct RecoverRequest: Codable, Sendable, Equatable {
        public var reason: String?
        public var since: String
        public var until: String?
        public var dry_run: Bool?
        /// Staff only: reach back before the subscription's creation.
        public var before_creation: Bool?

        public init(reason: String?, since: String, until: String?, dry_run: Bool?, before_creation: Bool? = nil) {
            self.reason = reason
            self.since = since
            self.until = until
            self.dry_run = dry_run
            self.before_creation = before_creation
        }
    }

    /// `POST /v1/dead-letters/redrive` (schema `RedriveRequest`).
    public struct RedriveRequest: Codable, Sendable, Equatable {
        public var reason: String
        public var subscription_id: String?
        public var since: String?
        public var until: String?
        public var dry_run: Bool?

        public init(reason: String, subscription_id: String?, since: String?, until: String?, dry_run: Bool?) {
            self.reason = reason
            self.subscription_id = subscription_id
            self.since = since
            self.until = until
            self.dry_run = dry_run
        }
    }

    /// `POST /v1/replays/{id}/cancel` (schema `ReasonRequest`).
    public struct ReasonRequest: Codable, Sendable, Equatable {
        public var reason: String

        public init(reason: String) {
            self.reason = reason
        }
    }

    /// `POST /v1/events/{id}/reverify` (schema `ReverifyRequest`): fresh echo headers, or the
    /// user's current access token; the other is left out.
    public struct ReverifyRequest: Codable, Sendable, Equatable {
        public var reason: String
        public var echo: EchoCredentials?
        public var oauth2: OAuth2Credentials?

        public init(reason: String, echo: EchoCredentials? = nil, oauth2: OAuth2Credentials? = nil) {
            self.reason = reason
            self.echo = echo
            self.oauth2 = oauth2
        }
    }

    /// An event's `oauth2` object (schema `OAuth2Credentials`). `access_token` is a credential:
    /// printed, it shows as redacted.
    public struct OAuth2Credentials: Codable, Sendable, Equatable, CustomStringConvertible {
        public var access_token: String

        public init(access_token: String) {
            self.access_token = access_token
        }

        public var description: String { "OAuth2Credentials(access_token: <redacted>)" }
    }

    /// An event's `echo` object (schema `EchoCredentials`). `authorization` is a credential:
    /// printed, it shows as redacted.
    public struct EchoCredentials: Codable, Sendable, Equatable, CustomStringConvertible {
        public var service_provider: String
        public var authorization: String

        public init(service_provider: String, authorization: String) {
            self.service_provider = service_provider
            self.authorization = authorization
        }

        public var description: String { "EchoCredentials(service_provider: \(service_provider), authorization: <redacted>)" }
    }

    /// The body of `POST /v1/subscriptions` (schema `SubscriptionInput`).
    public struct SubscriptionInput: Codable, Sendable, Equatable {
        public var url: String
        public var event_types: [String]
        /// Omitted when nil.
        public var description: String?
        /// Omitted when nil: the server's default (ordered).
        public var ordered: Bool?

        public init(url: String, event_types: [String], description: String? = nil, ordered: Bool? = nil) {
            self.url = url
            self.event_types = event_types
            self.description = description
            self.ordered = ordered
        }
    }
}
