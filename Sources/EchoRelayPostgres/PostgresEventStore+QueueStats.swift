import EchoRelayCore
import PostgresNIO

extension PostgresEventStore: QueueStatsStore {
    public func queueStats() async throws -> [QueueStats] {
        try await wrapped {
            // Counted up to a bound, and the oldest due item read from the front of the claim's
            // index: the cost of a scrape does not grow with the queues.
            let cap = QueueStats.depthCountedUpTo
            let rows = try await client.query("""
                SELECT 'verification', (SELECT count(*) FROM (SELECT 1 FROM work_items LIMIT \(cap)) w),
                       extract(epoch FROM now() - (SELECT min(due_at) FROM work_items WHERE kind = 'verify' AND due_at <= now()))::float8
                UNION ALL
                SELECT 'delivery', (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'pending' LIMIT \(cap)) d),
                       extract(epoch FROM now() - (SELECT min(due_at) FROM deliveries WHERE status = 'pending' AND due_at <= now()))::float8
                UNION ALL
                SELECT 'replay', count(*), extract(epoch FROM now() - min(created_at))::float8
                FROM replays WHERE state = 'running' AND NOT cursor_done
                """, logger: logger)
            var stats: [QueueStats] = []
            for try await (kind, depth, age) in rows.decode((String, Int, Double?).self) {
                stats.append(QueueStats(kind: kind, depth: depth, oldestDueAge: max(age ?? 0, 0)))
            }
            return stats
        }
    }

    public func subscriptionHealth() async throws -> [SubscriptionHealth] {
        try await wrapped {
            // The oldest due delivery by deliveries_due (subscription_id, due_at): one probe
            // a subscription. A leased delivery's due_at is its lease's end, so webhooks in
            // flight do not count as waiting.
            let rows = try await client.query("""
                SELECT s.id, s.enabled,
                       NOT s.enabled AND coalesce(s.disabled_reason NOT LIKE \(SubscriptionHealth.disabledByPersonPrefix + "%"), true),
                       coalesce(extract(epoch FROM now() - s.failing_since), 0)::float8,
                       coalesce(extract(epoch FROM now() - d.due_at), 0)::float8
                FROM subscriptions s
                LEFT JOIN LATERAL (
                    SELECT due_at FROM deliveries
                    WHERE subscription_id = s.id AND status = 'pending' AND parked_at IS NULL AND due_at <= now()
                    ORDER BY due_at LIMIT 1
                ) d ON true
                WHERE s.deleted_at IS NULL
                ORDER BY s.seq
                """, logger: logger)
            var health: [SubscriptionHealth] = []
            for try await (id, enabled, automatic, failing, due) in rows.decode((String, Bool, Bool, Double, Double).self) {
                health.append(SubscriptionHealth(subscriptionID: id, enabled: enabled, disabledAutomatically: automatic,
                                                 failingFor: max(failing, 0), oldestDueAge: max(due, 0)))
            }
            return health
        }
    }
}
