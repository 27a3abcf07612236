import Foundation
@testable import EchoRelayPostgres
import PostgresNIO
import TestSupport
import Testing

/// A prepared statement's plan is cached for the connection's life, made once while the
/// tables may be small or the queues empty: the batch statements' and the claims' plans must
/// read no table by scanning it (a sequential scan made cheap by an empty table, or a hash of
/// every pending row, would grow dearer with every event stored or queued).
@Suite struct CachedPlanTests {
    @Test(arguments: [
        ("finish_round", FinishRoundStatement.sql, "(text, text)", "('[]', NULL)"),
        ("record_attempts", RecordAttemptsStatement.sql, "(text)", "('[]')"),
        ("claim_deliveries", ClaimDeliveriesStatement.sql, "(int8[], int8, int8, text, float8)", "('{1,2}', 8, 64, 'o', 60)"),
        ("leased_deliveries", LeasedDeliveriesStatement.sql, "(int8[], text)", "('{1,2}', 'o')"),
        ("claim_verifications", ClaimVerificationsStatement.sql, "(int8, text, float8)", "(64, 'o', 60)"),
    ])
    func aPreparedStatementsCachedPlanReadsNoTableByScanning(name: String, sql: String, types: String, arguments: String) async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                try await client.withConnection { connection in
                    _ = try await connection.query("SET plan_cache_mode = force_generic_plan", logger: TestLogger.quiet)
                    _ = try await connection.query("PREPARE \(unescaped: name)\(unescaped: types) AS \(unescaped: sql)", logger: TestLogger.quiet)
                    let plan = try await connection.query(
                        "EXPLAIN (COSTS OFF) EXECUTE \(unescaped: name)\(unescaped: arguments)", logger: TestLogger.quiet
                    ).collect().map { try $0.decode(String.self) }.joined(separator: "\n")
                    for table in ["events", "work_items", "deliveries"] {
                        #expect(!plan.contains("Seq Scan on \(table)"), "no sequential scan of \(table) in the cached plan:\n\(plan)")
                    }
                }
            }
        }
    }

    /// Statistics taken while the queue was empty (as autovacuum or a quiet hour leaves them)
    /// made the attempt statement's cached plan scan every pending delivery, through a queue
    /// index it believed empty, to find a few by id. Once the backlog has outgrown them, the
    /// backlog reading refreshes them (`QueueStatistics`), and the plan no longer does.
    @Test func aRefreshOfTheQueuesStatisticsStopsTheAttemptStatementReadingTheWholeQueue() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let store = PostgresEventStore(client: client, logger: TestLogger.quiet)
                func fill(_ status: String, from first: Int) async throws {
                    _ = try await client.query("""
                        INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint, status)
                        SELECT 'e' || n, 'u' || n, 1, 'token.rotated', now(), '\\x00', 'verified'
                        FROM generate_series(\(first), \(first + 2_999)) n;
                        """, logger: TestLogger.quiet)
                    _ = try await client.query("""
                        INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, status)
                        SELECT 'e' || n, 's', 'u' || n, 1, 'msg_' || n, \(status)
                        FROM generate_series(\(first), \(first + 2_999)) n;
                        """, logger: TestLogger.quiet)
                }
                _ = try await client.query("""
                    INSERT INTO subscriptions (id, url, event_types, ordered, secret)
                    VALUES ('s', 'http://127.0.0.1:9/', '{token.rotated}', true, 'whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3')
                    """, logger: TestLogger.quiet)
                try await fill("delivered", from: 1)
                _ = try await client.query("ANALYZE work_items, deliveries", logger: TestLogger.quiet)
                try await fill("pending", from: 10_001)

                func attemptLookup() async throws -> String {
                    try await client.withConnection { connection in
                        _ = try await connection.query("SET plan_cache_mode = force_generic_plan", logger: TestLogger.quiet)
                        _ = try await connection.query("PREPARE record_attempts(text) AS \(unescaped: RecordAttemptsStatement.sql)",
                                                       logger: TestLogger.quiet)
                        let plan = try await connection.query("EXPLAIN (COSTS OFF) EXECUTE record_attempts('[]')", logger: TestLogger.quiet)
                            .collect().map { try $0.decode(String.self) }
                        _ = try await connection.query("DEALLOCATE record_attempts", logger: TestLogger.quiet)
                        // The first scan of `deliveries d`, the one that finds the attempts' deliveries
                        // (with the line after it, where a bitmap scan names its index).
                        let scan = try #require(plan.firstIndex { $0.contains("Scan") && $0.hasSuffix(" on deliveries d") },
                                                "\(plan.joined(separator: "\n"))")
                        return plan[scan...].prefix(2).joined(separator: "\n")
                    }
                }
                let stale = try await attemptLookup()
                #expect(stale.contains("deliveries_order"), "the statistics of an empty queue mislead the plan: \(stale)")
                try await store.refreshQueueStatistics()
                // By key, or among the deliveries in flight (the leased ones, which the
                // attempts' deliveries are): never through every pending one.
                let refreshed = try await attemptLookup()
                #expect(refreshed.contains("deliveries_pkey") || refreshed.contains("deliveries_leased"), "once refreshed: \(refreshed)")
            }
        }
    }
}
