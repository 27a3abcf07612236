import EchoRelayCore
import PostgresNIO

extension PostgresEventStore: BacklogStore {
    /// One statement, so both halves come from one snapshot: an event leaves verification
    /// and gets its deliveries in one commit, and is counted once. Each half stops at `cap`
    /// rows. The `ORDER BY` keeps the delivery half on `deliveries_backlog`, sorted by event,
    /// so the distinct events stream out and the scan stops at the cap: without it, a large
    /// backlog gets a hash of every pending delivery (measured: 74 ms for 150,000 pending
    /// rows at a cap of 20,000, against 66 ms for the 60,000 rows the capped scan reads, and
    /// growing with the backlog). The arrivals are the work items' identity sequence: it
    /// moves for every process.
    public func sampleBacklog(countingUpTo cap: Int, downAfter: Duration) async throws -> BacklogSample {
        let downSeconds = downAfter / .seconds(1)
        return try await wrapped {
            let rows = try await client.query("""
                SELECT (SELECT count(*) FROM (SELECT 1 FROM work_items WHERE kind = 'verify' LIMIT \(cap)) AS verifying)
                     + (SELECT count(*) FROM (
                            SELECT DISTINCT event_id FROM deliveries
                            WHERE status = 'pending' AND replay_id IS NULL
                              AND subscription_id IN (
                                  SELECT id FROM subscriptions
                                  WHERE enabled AND deleted_at IS NULL
                                    AND (failing_since IS NULL OR failing_since > now() - make_interval(secs => \(downSeconds))))
                            ORDER BY event_id LIMIT \(cap)) AS delivering),
                       coalesce(pg_sequence_last_value(pg_get_serial_sequence('work_items', 'id')), 0)
                """, logger: logger)
            for try await (count, arrivals) in rows.decode((Int, Int64).self) {
                return BacklogSample(count: min(count, cap), arrivals: arrivals)
            }
            throw StoreError.unexpected("the backlog reading returned no row")
        }
    }

    /// The tables the queue's statements plan on. `events` is left to autovacuum: its
    /// statements find rows by key or by user, whatever its statistics say, and it is the
    /// largest table to sample.
    public func refreshQueueStatistics() async throws {
        try await wrapped {
            try await client.query("ANALYZE work_items, deliveries", logger: logger)
        }
    }
}
