import EchoRelayCore
import EchoRelaySQL

extension SQLiteEventStore {
    /// Writes one audit entry in the caller's transaction, so an action and its entry commit together.
    static func audit(
        _ db: SQLiteDB, actor: Principal, action: String, target: String?, filter: JSONValue?, matched: Int?, reason: String?
    ) async throws {
        try await db.run("""
            INSERT INTO audit_log (at, actor_token_id, actor_name, actor_role, action, target, filter, matched, reason)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            """, [db.now, actor.tokenID, actor.name, actor.role.rawValue, action, target, filter.map(JSONText.init),
                  matched, reason])
    }

    /// The entry of a change, if it has one, in the change's transaction.
    static func audit(_ db: SQLiteDB, _ note: AuditNote?, target: String) async throws {
        guard let note else { return }
        try await audit(db, actor: note.actor, action: note.action, target: target, filter: nil, matched: nil, reason: note.reason)
    }

    public func recordAudit(actor: Principal, action: String, target: String?, filter: JSONValue?, matched: Int?, reason: String?) async throws {
        try await session.read { db in
            try await Self.audit(db, actor: actor, action: action, target: target, filter: filter, matched: matched, reason: reason)
        }
    }

    public func auditEntries(_ query: AuditQuery) async throws -> [AuditEntry] {
        try await session.read { db in
            try await db.rows("""
                SELECT \(AuditEntry.columns)
                FROM audit_log
                WHERE (?1 IS NULL OR action = ?1)
                  AND (?2 IS NULL OR actor_name = ?2)
                  AND (?3 IS NULL OR target = ?3)
                  AND (?4 IS NULL OR at >= ?4)
                  AND (?5 IS NULL OR at < ?5)
                  AND (?6 IS NULL OR id < ?6)
                ORDER BY id DESC LIMIT ?7
                """, [query.action, query.actorName, query.target, query.since, query.until, query.beforeID, query.limit])
                .map(AuditEntry.init(row:))
        }
    }
}
