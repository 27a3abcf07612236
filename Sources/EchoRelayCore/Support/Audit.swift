import Foundation

/// One support or admin action: who did what, to what, with which filter, how many it
/// matched, and why.
public struct AuditEntry: Sendable, Equatable {
    public var id: Int64
    public var at: Date
    public var actorTokenID: String?
    public var actorName: String
    public var actorRole: String
    public var action: String
    public var target: String?
    public var filter: JSONValue?
    public var matched: Int?
    public var reason: String?
}

extension AuditEntry {
    public init(row: some StoreRow) throws {
        self.init(
            id: try row.int64(0), at: try row.date(1), actorTokenID: try row.optionalString(2), actorName: try row.string(3),
            actorRole: try row.string(4), action: try row.string(5), target: try row.optionalString(6),
            filter: try row.optionalJSON(7), matched: try row.optionalInt(8), reason: try row.optionalString(9)
        )
    }
}

public struct AuditQuery: Sendable, Equatable {
    public var action: String?
    public var actorName: String?
    public var target: String?
    public var since: Date?
    public var until: Date?
    /// Only entries older than this id (the cursor of the previous page).
    public var beforeID: Int64?
    public var limit: Int

    public init(action: String? = nil, actorName: String? = nil, target: String? = nil, since: Date? = nil,
                until: Date? = nil, beforeID: Int64? = nil, limit: Int = 50) {
        self.beforeID = beforeID
        self.action = action
        self.actorName = actorName
        self.target = target
        self.since = since
        self.until = until
        self.limit = limit
    }
}

/// The audit log. Actions that change data write their entry in their own transaction;
/// `recordAudit` is for the rest.
public protocol AuditStore: Sendable {
    func recordAudit(actor: Principal, action: String, target: String?, filter: JSONValue?, matched: Int?, reason: String?) async throws
    /// Newest first.
    func auditEntries(_ query: AuditQuery) async throws -> [AuditEntry]
}
