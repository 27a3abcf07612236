import EchoRelayCore
import Foundation

/// Only a queue's head is due (003_sqlite_delivery_heads.sql): for an ordered subscription,
/// a delivery behind an earlier pending delivery of the same (subscription, user), or behind
/// an earlier event of the user still awaiting verification, is parked until that one is
/// final. The embedded store writes one transaction at a time, so parking and unparking here
/// are exact; the claim checks the rule once more all the same.
extension SQLiteEventStore {
    /// True for a delivery `d` of subscription `s` that must wait: the order rule (docs/architecture.md).
    static let blocked = """
        (s.ordered = 1 AND (
            EXISTS (SELECT 1 FROM deliveries b
                    WHERE b.subscription_id = d.subscription_id AND b.user_id = d.user_id
                      AND b.sequence < d.sequence AND b.status = 'pending')
         OR EXISTS (SELECT 1 FROM events e
                    WHERE e.user_id = d.user_id AND e.sequence < d.sequence AND e.status = 'pending'
                      AND e.type IN (SELECT value FROM json_each(s.event_types)))))
        """

    /// Parks those of these new deliveries that must wait.
    static func parkBlocked(ids: [Int64], db: SQLiteDB) async throws {
        guard !ids.isEmpty else { return }
        try await db.run("""
            UPDATE deliveries SET parked_at = ?1
            WHERE id IN (SELECT d.id FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
                         WHERE d.id IN (SELECT value FROM json_each(?2)) AND d.status = 'pending' AND \(blocked))
            """, [db.now, JSONText(.array(ids.map(JSONValue.integer)))])
    }

    /// Unparks the first parked delivery of the user's queues (one subscription's, or every
    /// one's) when nothing blocks it any more: after one of them became final. It is due from
    /// when it was made, not from now: a user's queue moves one delivery at a time, and due
    /// from its unpark each went to the back of a backlog, so a user with several events
    /// waited for the whole backlog once an event.
    static func unparkHeads(userID: String, subscriptionID: String?, db: SQLiteDB) async throws {
        try await db.run("""
            UPDATE deliveries SET parked_at = NULL, due_at = min(created_at, ?1)
            WHERE id IN (
                SELECT d.id FROM subscriptions s
                JOIN deliveries d ON d.id = (SELECT p.id FROM deliveries p
                                             WHERE p.user_id = ?2 AND p.subscription_id = s.id
                                               AND p.status = 'pending' AND p.parked_at IS NOT NULL
                                             ORDER BY p.sequence LIMIT 1)
                WHERE (?3 IS NULL OR s.id = ?3) AND NOT \(blocked))
            """, [db.now, userID, subscriptionID])
    }

    public func unparkStrandedDeliveries(parkedSince: Date?) async throws -> Int {
        try await session.write { db in
            try await db.rows("""
                UPDATE deliveries SET parked_at = NULL, due_at = min(created_at, ?1)
                WHERE id IN (SELECT d.id FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
                             WHERE d.status = 'pending' AND d.parked_at IS NOT NULL AND d.parked_at >= ?2
                               AND NOT \(Self.blocked))
                RETURNING id
                """, [db.now, parkedSince.map(SQLiteTime.microseconds) ?? Int64.min]).count
        }
    }
}
