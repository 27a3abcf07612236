import EchoRelayCore

extension SQLiteEventStore {
    /// The same reading as PostgreSQL's, in one statement: each half stops at `cap` rows of an
    /// index (`work_items_claim`; `deliveries_backlog`, sorted by event), and the arrivals are
    /// the work items' AUTOINCREMENT counter, which never goes back.
    public func sampleBacklog(countingUpTo cap: Int, downAfter: Duration) async throws -> BacklogSample {
        let downSince = SQLiteTime.now() - downAfter.microseconds
        return try await session.read { db in
            let row = try await db.rows("""
                SELECT (SELECT count(*) FROM (SELECT 1 FROM work_items WHERE kind = 'verify' LIMIT ?1))
                     + (SELECT count(*) FROM (
                            SELECT DISTINCT event_id FROM deliveries
                            WHERE status = 'pending' AND replay_id IS NULL
                              AND subscription_id IN (
                                  SELECT id FROM subscriptions
                                  WHERE enabled = 1 AND deleted_at IS NULL AND (failing_since IS NULL OR failing_since > ?2))
                            ORDER BY event_id LIMIT ?1)),
                       coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'work_items'), 0)
                """, [cap, downSince]).first
            guard let row else { throw StoreError.unexpected("the backlog reading returned no row") }
            return BacklogSample(count: min(try row.int(0), cap), arrivals: try row.int64(1))
        }
    }

    /// SQLite keeps no statistics unless ANALYZE is run, which EchoRelay never does: its
    /// planner chooses by the indexes' shapes alone, so a burst changes none of its plans.
    public func refreshQueueStatistics() async throws {}
}
