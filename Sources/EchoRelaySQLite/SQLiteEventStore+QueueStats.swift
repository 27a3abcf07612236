import EchoRelayCore

extension SQLiteEventStore {
    public func queueStats() async throws -> [QueueStats] {
        let now = SQLiteTime.now()
        return try await session.read { db in
            // Counted up to a bound, and the oldest due item read from the front of the claim's
            // index: the cost of a scrape does not grow with the queues.
            try await db.rows("""
                SELECT 'verification', (SELECT count(*) FROM (SELECT 1 FROM work_items LIMIT ?2)),
                       ?1 - (SELECT min(due_at) FROM work_items WHERE kind = 'verify' AND due_at <= ?1)
                UNION ALL
                SELECT 'delivery', (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'pending' LIMIT ?2)),
                       ?1 - (SELECT min(due_at) FROM deliveries WHERE status = 'pending' AND due_at <= ?1)
                UNION ALL
                SELECT 'replay', count(*), ?1 - min(created_at) FROM replays WHERE state = 'running' AND cursor_done = 0
                """, [now, QueueStats.depthCountedUpTo]).map { row in
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
