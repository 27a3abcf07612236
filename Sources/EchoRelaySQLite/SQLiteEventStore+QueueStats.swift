import EchoRelayCore

extension SQLiteEventStore {
    public func queueStats() async throws -> [QueueStats] {
        let now = SQLiteTime.now()
        return try await session.read { db in
            try await db.rows("""
                SELECT 'verification', count(*), ?1 - min(CASE WHEN due_at <= ?1 THEN due_at END) FROM work_items
                UNION ALL
                SELECT 'delivery', count(*), ?1 - min(CASE WHEN due_at <= ?1 THEN due_at END) FROM deliveries WHERE status = 'pending'
                UNION ALL
                SELECT 'replay', count(*), ?1 - min(created_at) FROM replays WHERE state = 'running' AND cursor_done = 0
                """, [now]).map { row in
                // Times are microseconds.
                QueueStats(kind: try row.string(0), depth: try row.int(1),
                           oldestDueAge: max(Double(try row.optionalInt64(2) ?? 0) / 1_000_000, 0))
            }
        }
    }

    public func subscriptionHealth() async throws -> [SubscriptionHealth] {
        let now = SQLiteTime.now()
        return try await session.read { db in
            // The oldest due delivery by deliveries_due (subscription_id, due_at): one probe a
            // subscription. A leased delivery's due_at is its lease's end.
            try await db.rows("""
                SELECT s.id, s.enabled,
                       s.enabled = 0 AND coalesce(substr(s.disabled_reason, 1, ?2) <> ?3, 1),
                       ?1 - s.failing_since,
                       ?1 - (SELECT min(due_at) FROM deliveries
                             WHERE subscription_id = s.id AND status = 'pending' AND parked_at IS NULL AND due_at <= ?1)
                FROM subscriptions s
                WHERE s.deleted_at IS NULL
                ORDER BY s.seq
                """, [now, Int64(SubscriptionHealth.disabledByPersonPrefix.utf8.count), SubscriptionHealth.disabledByPersonPrefix]).map { row in
                // Times are microseconds.
                SubscriptionHealth(
                    subscriptionID: try row.string(0), enabled: try row.int(1) != 0, disabledAutomatically: try row.int(2) != 0,
                    failingFor: max(Double(try row.optionalInt64(3) ?? 0) / 1_000_000, 0),
                    oldestDueAge: max(Double(try row.optionalInt64(4) ?? 0) / 1_000_000, 0)
                )
            }
        }
    }
}
