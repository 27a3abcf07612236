import EchoRelayCore
import Foundation

extension SQLiteEventStore {
    /// The event `e` has been final since before `cutoff` (a parameter such as `?2`), as
    /// PostgreSQL's `finalBefore`: its outcome decided and every delivery of it final.
    static func finalBefore(_ cutoff: String) -> String {
        """
        (e.status <> 'pending' AND e.decided_at < \(cutoff)
         AND NOT EXISTS (SELECT 1 FROM deliveries p WHERE p.event_id = e.id
                         AND (p.status = 'pending' OR p.finished_at >= \(cutoff))))
        """
    }

    public func pruneEvents(finalBefore cutoff: Date, after cursor: Int64, limit: Int, dryRun: Bool) async throws -> PruneStep {
        let at = SQLiteTime.microseconds(cutoff)
        return try await session.write { db in
            let scanned = try await db.rows("SELECT id, event_id, created_at FROM deliveries WHERE id > ?1 ORDER BY id LIMIT ?2", [cursor, limit])
            guard let last = scanned.last else { return PruneStep(removed: PruneCounts(), cursor: cursor, done: true) }
            // Only deliveries made before the cutoff can belong to an event final before it.
            let candidates = Array(Set(try scanned.filter { try $0.int64(2) < at }.map { try $0.string(1) }))
            let final = candidates.isEmpty ? [] : try await db.rows("""
                SELECT e.id FROM events e
                WHERE e.id IN (SELECT value FROM json_each(?1)) AND e.pruned_at IS NULL AND \(Self.finalBefore("?2"))
                  AND NOT EXISTS (SELECT 1 FROM replays r WHERE r.state = 'running' AND NOT r.cursor_done)
                """, [JSONText(candidates), at]).map { try $0.string(0) }
            let doomed = try await db.rows(
                "SELECT id FROM deliveries WHERE event_id IN (SELECT value FROM json_each(?1))", [JSONText(final)]
            ).map { try $0.int64(0) }
            let attempts = try await Self.attempts(ofDeliveries: doomed, db: db)
            if !dryRun, !final.isEmpty {
                try await db.run("DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT value FROM json_each(?1))", [JSONText(doomed)])
                try await db.run("DELETE FROM deliveries WHERE id IN (SELECT value FROM json_each(?1))", [JSONText(doomed)])
                try await db.run("""
                    UPDATE events SET pruned_at = ?2, pushed_phone_number = NULL WHERE id IN (SELECT value FROM json_each(?1))
                    """, [JSONText(final), db.now])
            }
            let newest = try scanned.map { try $0.int64(2) }.max() ?? 0
            return PruneStep(removed: PruneCounts(events: final.count, deliveries: doomed.count, attempts: attempts),
                             cursor: try last.int64(0), done: scanned.count < limit || newest >= at)
        }
    }

    public func pruneAttempts(finalBefore cutoff: Date, sparing: Date?, after cursor: Int64, limit: Int, dryRun: Bool) async throws -> PruneStep {
        let at = SQLiteTime.microseconds(cutoff)
        return try await session.write { db in
            let scanned = try await db.rows("""
                SELECT a.id, d.event_id, a.started_at FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
                WHERE a.id > ?1 ORDER BY a.id LIMIT ?2
                """, [cursor, limit])
            guard let last = scanned.last else { return PruneStep(removed: PruneCounts(), cursor: cursor, done: true) }
            let candidates = Array(Set(try scanned.filter { try $0.int64(2) < at }.map { try $0.string(1) }))
            let final = candidates.isEmpty ? [] : Set(try await db.rows("""
                SELECT e.id FROM events e
                WHERE e.id IN (SELECT value FROM json_each(?1)) AND \(Self.finalBefore("?2"))
                  AND (?3 IS NULL OR NOT \(Self.finalBefore("?3")))
                """, [JSONText(candidates), at, sparing.map(SQLiteTime.microseconds)]).map { try $0.string(0) })
            let doomed = try scanned.filter { final.contains(try $0.string(1)) }.map { try $0.int64(0) }
            if !dryRun, !doomed.isEmpty {
                try await db.run("DELETE FROM delivery_attempts WHERE id IN (SELECT value FROM json_each(?1))", [JSONText(doomed)])
            }
            let newest = try scanned.map { try $0.int64(2) }.max() ?? 0
            return PruneStep(removed: PruneCounts(attempts: doomed.count), cursor: try last.int64(0),
                             done: scanned.count < limit || newest >= at)
        }
    }

    public func pruneTestDeliveries(before cutoff: Date, limit: Int, dryRun: Bool) async throws -> Int {
        let at = SQLiteTime.microseconds(cutoff)
        if dryRun {
            return try await session.read { db in
                try await db.row("SELECT count(*) FROM test_deliveries WHERE started_at < ?1", [at])?.int(0) ?? 0
            }
        }
        return try await session.write { db in
            try await db.rows("""
                DELETE FROM test_deliveries WHERE id IN (SELECT id FROM test_deliveries WHERE started_at < ?1 ORDER BY id LIMIT ?2)
                RETURNING id
                """, [at, limit]).count
        }
    }

    private static func attempts(ofDeliveries ids: [Int64], db: SQLiteDB) async throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try await db.row(
            "SELECT count(*) FROM delivery_attempts WHERE delivery_id IN (SELECT value FROM json_each(?1))", [JSONText(ids)]
        )?.int(0) ?? 0
    }
}
