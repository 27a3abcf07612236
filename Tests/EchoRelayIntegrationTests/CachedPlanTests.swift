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
        ("claim_deliveries", ClaimDeliveriesStatement.sql, "(int8, int8, int8, text, float8, float8)", "(8, 8, 64, 'o', 60, 60)"),
        ("leased_deliveries", LeasedDeliveriesStatement.sql, "(int8[], text)", "('{1,2}', 'o')"),
        ("claim_verifications", ClaimVerificationsStatement.sql, "(int8, text, float8, float8)", "(64, 'o', 60, 60)"),
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
}
