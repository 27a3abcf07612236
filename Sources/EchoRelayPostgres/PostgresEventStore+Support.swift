import EchoRelayCore
import EchoRelaySQL
import PostgresNIO

extension PostgresEventStore: TimelineStore {
    public func timeline(_ query: TimelineQuery) async throws -> [TimelineEntry] {
        try await wrapped {
            var binds = PostgresBindings(capacity: 7)
            binds.append(query.userID)
            binds.append(query.types?.map(\.rawValue))
            binds.append(query.statuses?.map(\.rawValue))
            binds.append(query.since)
            binds.append(query.until)
            binds.append(query.beforeSequence)
            binds.append(query.limit)
            return try await Self.entries(client.query(PostgresQuery(unsafeSQL: Self.timelineSQL, binds: binds), logger: logger))
        }
    }

    public func recentEvents(_ query: RecentEventsQuery) async throws -> [TimelineEntry] {
        try await wrapped {
            var binds = PostgresBindings(capacity: 9)
            binds.append(query.types?.map(\.rawValue))
            binds.append(query.statuses?.map(\.rawValue))
            binds.append(query.reasons?.map(\.rawValue))
            binds.append(query.since)
            binds.append(query.until)
            binds.append(query.subscriptionID)
            binds.append(query.before?.receivedAtMicroseconds)
            binds.append(query.before?.eventID)
            binds.append(query.limit)
            return try await Self.entries(client.query(PostgresQuery(unsafeSQL: Self.recentEventsSQL, binds: binds), logger: logger))
        }
    }

    // Both lists cut their page from the events first, then find each event's deliveries by
    // key (`withDeliveries`). A filter left out is a NULL the planner folds away: the
    // statements are planned with their values. SupportPlanTests shows the plans.

    /// A user's events, highest sequence first.
    static let timelineSQL = """
        SELECT \(entryColumns)
        FROM (SELECT * FROM events e
              WHERE e.user_id = $1
                AND ($2::text[] IS NULL OR e.type = ANY ($2::text[]))
                AND ($3::text[] IS NULL OR e.status = ANY ($3::text[]))
                AND ($4::timestamptz IS NULL OR e.received_at >= $4)
                AND ($5::timestamptz IS NULL OR e.received_at < $5)
                AND ($6::bigint IS NULL OR e.sequence < $6)
              ORDER BY e.sequence DESC
              LIMIT $7) e
        \(withDeliveries)
        ORDER BY e.sequence DESC
        """

    /// Every user's events, newest received first, read from 009_recent_events.sql's indexes.
    static let recentEventsSQL = """
        SELECT \(entryColumns)
        FROM (SELECT * FROM events e
              WHERE ($1::text[] IS NULL OR e.type = ANY ($1::text[]))
                AND ($2::text[] IS NULL OR e.status = ANY ($2::text[]))
                AND ($3::text[] IS NULL OR e.status_reason = ANY ($3::text[]))
                AND ($4::timestamptz IS NULL OR e.received_at >= $4)
                AND ($5::timestamptz IS NULL OR e.received_at < $5)
                -- A probe per event by key (an EXISTS the planner may hash would read every
                -- delivery of the subscription).
                AND ($6::text IS NULL OR (SELECT 1 FROM deliveries s
                                          WHERE s.event_id = e.id AND s.subscription_id = $6 AND s.replay_id IS NULL) IS NOT NULL)
                AND ($7::bigint IS NULL
                     OR (e.received_at, e.id) < (timestamptz 'epoch' + $7 * interval '1 microsecond', $8::text))
              ORDER BY e.received_at DESC, e.id DESC
              LIMIT $9) e
        \(withDeliveries)
        ORDER BY e.received_at DESC, e.id DESC
        """

    /// What `entries` reads of a page `e` and its deliveries.
    static let entryColumns = StoredEvent.summaryColumns + ", replayed.replays, originals.subscriptions, originals.statuses"

    /// Each event of the page finds its deliveries by key, through the two unique indexes
    /// (originals, replays): no index has the event alone, and a join the planner may hash
    /// reads every delivery.
    static let withDeliveries = """
        CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(o.subscription_id ORDER BY o.subscription_id), '{}') AS subscriptions,
                   coalesce(array_agg(o.status ORDER BY o.subscription_id), '{}') AS statuses
            FROM deliveries o WHERE o.event_id = e.id AND o.replay_id IS NULL
        ) originals
        CROSS JOIN LATERAL (
            SELECT count(*)::integer AS replays FROM deliveries r WHERE r.event_id = e.id AND r.replay_id IS NOT NULL
        ) replayed
        """

    private static func entries(_ rows: PostgresRowSequence) async throws -> [TimelineEntry] {
        try await rows.storeRows().map { row in
            let event = try StoredEvent(summaryRow: row)
            let bySubscription = try zip(try row.stringArray(13), try row.stringArray(14)).map { subscriptionID, status in
                guard let status = DeliveryStatus(rawValue: status) else {
                    throw StoreError.unexpected("a delivery of event \(event.id) has an unknown status")
                }
                return SubscriptionDeliveryState(subscriptionID: subscriptionID, status: status)
            }
            return TimelineEntry(event: event, deliveries: DeliverySummary(bySubscription: bySubscription, replays: try row.int(12)))
        }
    }
}

extension PostgresEventStore: DeadLetterStore {
    public func deadLetters(_ filter: DeadLetterFilter, beforeID: Int64?, limit: Int) async throws -> [DeadLetter] {
        try await rows("""
            SELECT \(unescaped: DeadLetter.columns), a.status_code, a.error
            FROM deliveries d
            JOIN events e ON e.id = d.event_id
            LEFT JOIN LATERAL (SELECT status_code, error FROM delivery_attempts
                               WHERE delivery_id = d.id ORDER BY id DESC LIMIT 1) a ON true
            WHERE d.status = 'dead'
              AND (\(filter.subscriptionID)::text IS NULL OR d.subscription_id = \(filter.subscriptionID))
              AND (\(filter.since)::timestamptz IS NULL OR e.received_at >= \(filter.since))
              AND (\(filter.until)::timestamptz IS NULL OR e.received_at < \(filter.until))
              AND (\(beforeID)::bigint IS NULL OR d.id < \(beforeID))
            ORDER BY d.id DESC
            LIMIT \(limit)
            """, DeadLetter.init(row:))
    }

    public func redriveDeadLetters(_ filter: DeadLetterFilter, dryRun: Bool, actor: Principal, reason: String) async throws -> Int {
        try await transaction { connection in
            // A redriven delivery keeps its row, webhook-id and attempt history; its try count
            // starts again, so it gets the whole retry schedule once more.
            let matching = try await (try await connection.query("""
                SELECT d.id FROM deliveries d
                JOIN events e ON e.id = d.event_id
                JOIN subscriptions s ON s.id = d.subscription_id
                WHERE d.status = 'dead' AND s.deleted_at IS NULL
                  AND (\(filter.subscriptionID)::text IS NULL OR d.subscription_id = \(filter.subscriptionID))
                  AND (\(filter.since)::timestamptz IS NULL OR e.received_at >= \(filter.since))
                  AND (\(filter.until)::timestamptz IS NULL OR e.received_at < \(filter.until))
                FOR UPDATE OF d
                """, logger: logger)).decode(Int64.self).gathered()
            if dryRun { return matching.count }
            try await connection.query("""
                UPDATE deliveries
                SET status = 'pending', attempts = 0, due_at = now(), finished_at = NULL,
                    lease_owner = NULL, lease_expires_at = NULL
                WHERE id = ANY (\(matching))
                """, logger: logger)
            try await Self.audit(on: connection, logger: logger, actor: actor, action: "dead_letters.redrive", target: nil,
                                 filter: filter.json, matched: matching.count, reason: reason)
            return matching.count
        }
    }
}
