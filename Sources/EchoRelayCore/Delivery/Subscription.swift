import Foundation

/// An app backend's subscription: where to POST which verified updates, signed with its secret.
public struct Subscription: Sendable, Equatable {
    public var id: String
    /// The `app` token that created it; nil when an administrator did.
    public var ownerTokenID: String?
    public var url: String
    public var eventTypes: [EventType]
    public var description: String?
    /// Per user, in sequence order (docs/architecture.md, "Leases, hand-offs and order").
    public var ordered: Bool
    public var enabled: Bool
    public var disabledReason: String?
    public var createdAt: Date
    public var updatedAt: Date
    public var lastSuccessAt: Date?
    public var failingSince: Date?
}

extension Subscription {
    public init(row: some StoreRow) throws {
        self.init(
            id: try row.string(0), ownerTokenID: try row.optionalString(1), url: try row.string(2),
            eventTypes: try row.stringArray(3).compactMap(EventType.init(rawValue:)), description: try row.optionalString(4),
            ordered: try row.bool(5), enabled: try row.bool(6), disabledReason: try row.optionalString(7),
            createdAt: try row.date(8), updatedAt: try row.date(9), lastSuccessAt: try row.optionalDate(10),
            failingSince: try row.optionalDate(11)
        )
    }
}

/// The fields a client sets on create (all) or update (some).
public struct SubscriptionFields: Sendable, Equatable {
    public var url: String?
    public var eventTypes: [EventType]?
    /// `.some(nil)` clears the description.
    public var description: String??
    public var ordered: Bool?

    public init(url: String? = nil, eventTypes: [EventType]? = nil, description: String?? = nil, ordered: Bool? = nil) {
        self.url = url
        self.eventTypes = eventTypes
        self.description = description
        self.ordered = ordered
    }
}

/// One page of a listing, and the cursor of the next page (nil on the last).
public struct SubscriptionPage: Sendable {
    public var subscriptions: [Subscription]
    public var nextCursor: String?
}

extension SubscriptionPage {
    /// The `seq` a listing goes on after: the one its cursor names, or 0 for the first page.
    /// A cursor is a `seq` in decimal, as the other listings' are (the document's `Cursor`).
    /// The base64 of `s:` and a `seq` that earlier versions gave is still read, so that a
    /// listing paged across an upgrade goes on.
    public static func seq(after cursor: String?) throws(SubscriptionCursorError) -> Int64 {
        guard let cursor else { return 0 }
        if (1...18).contains(cursor.utf8.count), cursor.utf8.allSatisfy({ (0x30...0x39).contains($0) }), cursor.first != "0" {
            return Int64(cursor)!
        }
        guard let data = Data(base64Encoded: cursor), let text = String(data: data, encoding: .utf8),
              text.hasPrefix("s:"), let seq = Int64(text.dropFirst(2)), seq > 0 else { throw .invalid }
        return seq
    }

    /// A page of at most `limit` out of `rows` (`Subscription.columns`), read in `seq` order
    /// with a limit of `limit + 1`: a row beyond the page means a next one, whose cursor is
    /// the page's last `seq`.
    public init(rows: [some StoreRow], limit: Int) throws {
        let page = try rows.map { (try Subscription(row: $0), seq: try $0.int64(12)) }
        let items = page.prefix(limit)
        self.init(subscriptions: items.map(\.0),
                  nextCursor: page.count > limit ? items.last.map { String($0.seq) } : nil)
    }
}

/// The storage of subscriptions. Each change takes the audit entry that records it, written
/// in the change's own transaction (the subscription's id is its target), so a change is
/// never committed without its entry, nor an entry without its change.
public protocol SubscriptionStore: Sendable {
    /// With `limit`, an owner that already has that many subscriptions (deleted ones not
    /// counted) gets `SubscriptionLimitReached` and nothing is stored; two creations at once
    /// cannot both pass it.
    func createSubscription(_ fields: SubscriptionFields, ownerTokenID: String?, secret: String, limit: Int?,
                            audit: AuditNote?) async throws -> Subscription
    /// `owner` nil lists every subscription; otherwise only that token's.
    func subscriptions(owner: String?, cursor: String?, limit: Int) async throws -> SubscriptionPage
    func subscription(id: String) async throws -> Subscription?
    /// Those of `ids` that exist and are not deleted, in no order: what a page that names a
    /// few subscriptions reads, rather than all of them.
    func subscriptions(ids: [String]) async throws -> [Subscription]
    func updateSubscription(id: String, _ fields: SubscriptionFields, audit: AuditNote?) async throws -> Subscription?
    /// Deletes it and cancels its pending deliveries. False if there was none.
    func deleteSubscription(id: String, audit: AuditNote?) async throws -> Bool
    func setSubscriptionEnabled(id: String, _ enabled: Bool, reason: String?, audit: AuditNote?) async throws -> Subscription?
    /// The new secret signs from now on; the old one signs too until `overlap` has passed.
    func rotateSubscriptionSecret(id: String, newSecret: String, overlap: Duration, audit: AuditNote?) async throws -> Subscription?
    /// Seals every subscription's secrets (deleted ones and previous secrets included) with the
    /// store's first `SecretSealer` key, in one transaction: plain ones are sealed, ones sealed
    /// with another key are opened and sealed again. Returns how many subscriptions changed.
    /// Throws `SecretSealerError.notConfigured` when the store has no sealer, and any
    /// `SecretSealerError` of a secret it cannot open (then nothing changes).
    func resealSubscriptionSecrets() async throws -> Int
}

extension SubscriptionStore {
    /// The changes made by no one in particular (the workers, tests), with no audit entry.
    public func createSubscription(_ fields: SubscriptionFields, ownerTokenID: String?, secret: String) async throws -> Subscription {
        try await createSubscription(fields, ownerTokenID: ownerTokenID, secret: secret, limit: nil, audit: nil)
    }

    public func updateSubscription(id: String, _ fields: SubscriptionFields) async throws -> Subscription? {
        try await updateSubscription(id: id, fields, audit: nil)
    }

    public func deleteSubscription(id: String) async throws -> Bool {
        try await deleteSubscription(id: id, audit: nil)
    }

    public func setSubscriptionEnabled(id: String, _ enabled: Bool, reason: String?) async throws -> Subscription? {
        try await setSubscriptionEnabled(id: id, enabled, reason: reason, audit: nil)
    }

    public func rotateSubscriptionSecret(id: String, newSecret: String, overlap: Duration) async throws -> Subscription? {
        try await rotateSubscriptionSecret(id: id, newSecret: newSecret, overlap: overlap, audit: nil)
    }
}

/// An audit entry to write with a change: who, what (`subscription.create`), and why.
public struct AuditNote: Sendable {
    public var actor: Principal
    public var action: String
    public var reason: String?

    public init(actor: Principal, action: String, reason: String? = nil) {
        self.actor = actor
        self.action = action
        self.reason = reason
    }
}

/// An app already has `ECHORELAY_MAX_SUBSCRIPTIONS_PER_APP` subscriptions.
public struct SubscriptionLimitReached: Error, Sendable, Equatable {
    public let limit: Int

    public init(limit: Int) {
        self.limit = limit
    }
}

public enum SubscriptionCursorError: Error { case invalid }
