extension API {
    /// One page of a list, as every list route answers it: `{"<list>": [...], "next_cursor": …}`,
    /// the cursor `null` on the last page. The list's member is named by its items' type.
    public struct Page<Item: Listed>: Codable, Sendable, Equatable {
        public var items: [Item]
        /// The next page's cursor; nil on the last page.
        public var next_cursor: String?

        public init(_ items: [Item], next_cursor: String?) {
            self.items = items
            self.next_cursor = next_cursor
        }

        private struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(_ name: String) { stringValue = name }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            items = try container.decode([Item].self, forKey: Key(Item.listName))
            next_cursor = try container.decodeIfPresent(String.self, forKey: Key("next_cursor"))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(items, forKey: Key(Item.listName))
            try container.encode(next_cursor, forKey: Key("next_cursor"))  // null, not absent, on the last page
        }
    }

    /// A type the API answers in pages, and the member its page holds it in.
    public protocol Listed: Codable, Sendable, Equatable {
        static var listName: String { get }
    }

    /// `GET /v1/subscriptions` (schema `SubscriptionList`).
    public typealias SubscriptionList = Page<Subscription>
    /// `GET /v1/subscriptions/{id}/deliveries` (schema `SubscriptionDeliveryList`).
    public typealias SubscriptionDeliveryList = Page<SubscriptionDelivery>
    /// `GET /v1/users/{user_id}/events` and `GET /v1/events` (schema `Timeline`).
    public typealias Timeline = Page<TimelineEvent>
    /// `GET /v1/dead-letters` (schema `DeadLetterList`).
    public typealias DeadLetterList = Page<DeadLetter>
    /// `GET /v1/sets` (schema `SecurityEventList`).
    public typealias SecurityEventList = Page<SecurityEvent>
    /// `GET /v1/audit` (schema `AuditList`).
    public typealias AuditList = Page<AuditEntry>
}

extension API.Subscription: API.Listed { public static var listName: String { "subscriptions" } }
extension API.SubscriptionDelivery: API.Listed { public static var listName: String { "deliveries" } }
extension API.TimelineEvent: API.Listed { public static var listName: String { "events" } }
extension API.DeadLetter: API.Listed { public static var listName: String { "dead_letters" } }
extension API.SecurityEvent: API.Listed { public static var listName: String { "security_events" } }
extension API.AuditEntry: API.Listed { public static var listName: String { "entries" } }
