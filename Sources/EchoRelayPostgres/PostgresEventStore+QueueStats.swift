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
}
