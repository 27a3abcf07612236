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
}
