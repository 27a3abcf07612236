import EchoRelayCore
import EchoRelaySQL
import Foundation

extension SQLiteEventStore {
    public func timeline(_ query: TimelineQuery) async throws -> [TimelineEntry] {
        try await session.read { db in
            try await db.rows("""
                SELECT \(Self.entryColumns)
                FROM events e LEFT JOIN deliveries d ON d.event_id = e.id
                WHERE e.user_id = ?1
                  AND (?2 IS NULL OR e.type IN (SELECT value FROM json_each(?2)))
                  AND (?3 IS NULL OR e.status IN (SELECT value FROM json_each(?3)))
                  AND (?4 IS NULL OR e.received_at >= ?4)
                  AND (?5 IS NULL OR e.received_at < ?5)
                  AND (?6 IS NULL OR e.sequence < ?6)
                GROUP BY e.id
                ORDER BY e.sequence DESC
                LIMIT ?7
                """, [query.userID, query.types.map { JSONText($0.map(\.rawValue)) },
                      query.statuses.map { JSONText($0.map(\.rawValue)) }, query.since, query.until, query.beforeSequence,
                      query.limit]).map(Self.entry)
        }
    }

    public func recentEvents(_ query: RecentEventsQuery) async throws -> [TimelineEntry] {
        try await session.read { db in
            // The page is cut from one index read backwards (005_sqlite_recent_events.sql)
            // before the deliveries are joined.
            try await db.rows("""
                SELECT \(Self.entryColumns)
                FROM (SELECT * FROM events e
                      WHERE (?1 IS NULL OR e.type IN (SELECT value FROM json_each(?1)))
                        AND (?2 IS NULL OR e.status IN (SELECT value FROM json_each(?2)))
                        AND (?3 IS NULL OR e.status_reason IN (SELECT value FROM json_each(?3)))
                        AND (?4 IS NULL OR e.received_at >= ?4)
                        AND (?5 IS NULL OR e.received_at < ?5)
                        AND (?6 IS NULL OR EXISTS (SELECT 1 FROM deliveries s
                                                   WHERE s.event_id = e.id AND s.subscription_id = ?6 AND s.replay_id IS NULL))
                        AND (?7 IS NULL OR (e.received_at, e.id) < (?7, ?8))
                      ORDER BY e.received_at DESC, e.id DESC
                      LIMIT ?9) e
                LEFT JOIN deliveries d ON d.event_id = e.id
                GROUP BY e.id
                ORDER BY e.received_at DESC, e.id DESC
                """, [query.types.map { JSONText($0.map(\.rawValue)) }, query.statuses.map { JSONText($0.map(\.rawValue)) },
                      query.reasons.map { JSONText($0.map(\.rawValue)) }, query.since, query.until, query.subscriptionID,
                      query.before?.receivedAtMicroseconds, query.before?.eventID, query.limit]).map(Self.entry)
        }
    }

    /// An event `e` with its deliveries `d` grouped: what `entry` reads.
    private static let entryColumns = StoredEvent.summaryColumns + """
        , count(d.id) FILTER (WHERE d.replay_id IS NOT NULL),
        json_group_array(json_array(d.subscription_id, d.status)) FILTER (WHERE d.id IS NOT NULL AND d.replay_id IS NULL)
        """

    private static func entry(_ row: Row) throws -> TimelineEntry {
        let event = try StoredEvent(summaryRow: row)
        let pairs = try JSONDecoder().decode([[String]].self, from: Data(try row.string(13).utf8))
        let bySubscription = try pairs.map { pair in
            guard pair.count == 2, let status = DeliveryStatus(rawValue: pair[1]) else {
                throw StoreError.unexpected("a delivery of event \(event.id) has an unknown status")
            }
            return SubscriptionDeliveryState(subscriptionID: pair[0], status: status)
        }.sorted { $0.subscriptionID < $1.subscriptionID }
        return TimelineEntry(event: event, deliveries: DeliverySummary(bySubscription: bySubscription, replays: try row.int(12)))
    }

    public func deadLetters(_ filter: DeadLetterFilter, beforeID: Int64?, limit: Int) async throws -> [DeadLetter] {
        try await session.read { db in
            try await db.rows("""
                SELECT \(DeadLetter.columns),
                       (SELECT a.status_code FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.id DESC LIMIT 1),
                       (SELECT a.error FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.id DESC LIMIT 1)
                FROM deliveries d
                JOIN events e ON e.id = d.event_id
                WHERE d.status = 'dead'
                  AND (?1 IS NULL OR d.subscription_id = ?1)
                  AND (?2 IS NULL OR e.received_at >= ?2)
                  AND (?3 IS NULL OR e.received_at < ?3)
                  AND (?4 IS NULL OR d.id < ?4)
                ORDER BY d.id DESC
                LIMIT ?5
                """, [filter.subscriptionID, filter.since, filter.until, beforeID, limit]).map(DeadLetter.init(row:))
        }
    }

    public func redriveDeadLetters(_ filter: DeadLetterFilter, dryRun: Bool, actor: Principal, reason: String) async throws -> Int {
        try await session.write { db in
            // A redriven delivery keeps its row, webhook-id and attempt history; its try count
            // starts again, so it gets the whole retry schedule once more.
            let matching = try await db.rows("""
                SELECT d.id FROM deliveries d
                JOIN events e ON e.id = d.event_id
                JOIN subscriptions s ON s.id = d.subscription_id
                WHERE d.status = 'dead' AND s.deleted_at IS NULL
                  AND (?1 IS NULL OR d.subscription_id = ?1)
                  AND (?2 IS NULL OR e.received_at >= ?2)
                  AND (?3 IS NULL OR e.received_at < ?3)
                """, [filter.subscriptionID, filter.since, filter.until]).map { try $0.int64(0) }
            if dryRun { return matching.count }
            try await db.run("""
                UPDATE deliveries
                SET status = 'pending', attempts = 0, due_at = ?1, finished_at = NULL, lease_owner = NULL, lease_expires_at = NULL
                WHERE id IN (SELECT value FROM json_each(?2))
                """, [db.now, JSONText(.array(matching.map(JSONValue.integer)))])
            try await Self.audit(db, actor: actor, action: "dead_letters.redrive", target: nil, filter: filter.json,
                                 matched: matching.count, reason: reason)
            return matching.count
        }
    }
}
