import EchoRelayCore
import PostgresNIO

extension PostgresEventStore: QueueStatsStore {
    public func queueStats() async throws -> [QueueStats] {
        do {
            let rows = try await client.query("""
                SELECT 'verification', count(*), extract(epoch FROM now() - min(due_at) FILTER (WHERE due_at <= now()))::float8
                FROM work_items
                UNION ALL
                SELECT 'delivery', count(*), extract(epoch FROM now() - min(due_at) FILTER (WHERE due_at <= now()))::float8
                FROM deliveries WHERE status = 'pending'
                UNION ALL
                SELECT 'replay', count(*), extract(epoch FROM now() - min(created_at))::float8
                FROM replays WHERE state = 'running' AND NOT cursor_done
                """, logger: logger)
            var stats: [QueueStats] = []
            for try await (kind, depth, age) in rows.decode((String, Int, Double?).self) {
                stats.append(QueueStats(kind: kind, depth: depth, oldestDueAge: max(age ?? 0, 0)))
            }
            return stats
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func subscriptionHealth() async throws -> [SubscriptionHealth] {
        do {
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
        } catch {
            throw StoreError.wrap(error)
        }
    }
}
