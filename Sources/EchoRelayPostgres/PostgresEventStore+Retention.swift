import EchoRelayCore
import Foundation
import PostgresNIO

extension PostgresEventStore: RetentionStore {
    /// The event `e` has been final since before `cutoff` (an SQL expression): its outcome
    /// decided and every delivery of it final. Deliveries are probed by event through the two
    /// partial unique indexes, so the test reads only the event's own rows.
    static func finalBefore(_ cutoff: String) -> String {
        """
        (e.status <> 'pending' AND e.decided_at < \(cutoff)
         AND NOT EXISTS (SELECT 1 FROM deliveries p WHERE p.event_id = e.id AND p.replay_id IS NULL
                         AND (p.status = 'pending' OR p.finished_at >= \(cutoff)))
         AND NOT EXISTS (SELECT 1 FROM deliveries p WHERE p.event_id = e.id AND p.replay_id IS NOT NULL
                         AND (p.status = 'pending' OR p.finished_at >= \(cutoff))))
        """
    }

    public func pruneEvents(finalBefore cutoff: Date, after cursor: Int64, limit: Int, dryRun: Bool) async throws -> PruneStep {
        try await transaction { connection in
            // Writable CTEs run to completion whether or not the last SELECT reads them; the
            // deliveries' attempts go with them (ON DELETE CASCADE).
            let rows = try await connection.query("""
                WITH c AS (SELECT \(cutoff)::timestamptz AS cutoff),
                scanned AS (SELECT id, event_id, created_at FROM deliveries WHERE id > \(cursor) ORDER BY id LIMIT \(limit)),
                final AS (
                    -- Only deliveries made before the cutoff can belong to an event final before it:
                    -- a round that finds nothing old probes nothing.
                    SELECT e.id FROM c, (SELECT DISTINCT s.event_id FROM c, scanned s WHERE s.created_at < c.cutoff) o
                    JOIN events e ON e.id = o.event_id
                    WHERE e.pruned_at IS NULL AND \(unescaped: Self.finalBefore("c.cutoff"))
                      -- A bulk replay or recover still making deliveries may need any event.
                      AND NOT EXISTS (SELECT 1 FROM replays r WHERE r.state = 'running' AND NOT r.cursor_done)
                ),
                doomed AS (
                    SELECT d.id FROM final f JOIN deliveries d ON d.event_id = f.id AND d.replay_id IS NULL
                    UNION ALL
                    SELECT d.id FROM final f JOIN deliveries d ON d.event_id = f.id AND d.replay_id IS NOT NULL
                ),
                gone AS (DELETE FROM deliveries WHERE NOT \(dryRun) AND id IN (SELECT id FROM doomed) RETURNING 1),
                marked AS (
                    UPDATE events e SET pruned_at = now(), pushed_phone_number = NULL
                    FROM final f WHERE NOT \(dryRun) AND e.id = f.id RETURNING 1
                )
                SELECT (SELECT max(id) FROM scanned),
                       (SELECT count(*) FROM scanned) < \(limit) OR (SELECT max(created_at) FROM scanned) >= (SELECT cutoff FROM c),
                       (SELECT count(*) FROM final), (SELECT count(*) FROM doomed),
                       (SELECT count(*) FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM doomed))
                """, logger: logger)
            for try await (last, done, events, deliveries, attempts) in rows.decode((Int64?, Bool?, Int64, Int64, Int64).self) {
                return PruneStep(removed: PruneCounts(events: Int(events), deliveries: Int(deliveries), attempts: Int(attempts)),
                                 cursor: last ?? cursor, done: done ?? true)
            }
            return PruneStep(removed: PruneCounts(), cursor: cursor, done: true)
        }
    }

    public func pruneAttempts(finalBefore cutoff: Date, sparing: Date?, after cursor: Int64, limit: Int, dryRun: Bool) async throws -> PruneStep {
        try await transaction { connection in
            let rows = try await connection.query("""
                WITH c AS (SELECT \(cutoff)::timestamptz AS cutoff, \(sparing)::timestamptz AS sparing),
                scanned AS (SELECT id, delivery_id, started_at FROM delivery_attempts WHERE id > \(cursor) ORDER BY id LIMIT \(limit)),
                of_deliveries AS (
                    SELECT s.id, d.event_id FROM c, scanned s JOIN deliveries d ON d.id = s.delivery_id WHERE s.started_at < c.cutoff
                ),
                final AS (
                    SELECT e.id FROM c, (SELECT DISTINCT event_id FROM of_deliveries) o JOIN events e ON e.id = o.event_id
                    WHERE \(unescaped: Self.finalBefore("c.cutoff"))
                      AND (c.sparing IS NULL OR NOT \(unescaped: Self.finalBefore("c.sparing")))
                ),
                doomed AS (SELECT o.id FROM of_deliveries o JOIN final f ON f.id = o.event_id),
                gone AS (DELETE FROM delivery_attempts WHERE NOT \(dryRun) AND id IN (SELECT id FROM doomed) RETURNING 1)
                SELECT (SELECT max(id) FROM scanned),
                       (SELECT count(*) FROM scanned) < \(limit) OR (SELECT max(started_at) FROM scanned) >= (SELECT cutoff FROM c),
                       (SELECT count(*) FROM doomed)
                """, logger: logger)
            for try await (last, done, attempts) in rows.decode((Int64?, Bool?, Int64).self) {
                return PruneStep(removed: PruneCounts(attempts: Int(attempts)), cursor: last ?? cursor, done: done ?? true)
            }
            return PruneStep(removed: PruneCounts(), cursor: cursor, done: true)
        }
    }

    public func pruneTestDeliveries(before cutoff: Date, limit: Int, dryRun: Bool) async throws -> Int {
        try await wrapped {
            let rows = dryRun
                ? try await client.query("SELECT count(*) FROM test_deliveries WHERE started_at < \(cutoff)", logger: logger)
                : try await client.query("""
                    WITH gone AS (
                        DELETE FROM test_deliveries WHERE id IN (
                            SELECT id FROM test_deliveries WHERE started_at < \(cutoff) ORDER BY id LIMIT \(limit))
                        RETURNING 1)
                    SELECT count(*) FROM gone
                    """, logger: logger)
            for try await count in rows.decode(Int64.self) { return Int(count) }
            return 0
        }
    }
}
