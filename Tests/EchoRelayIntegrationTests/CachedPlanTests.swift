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
    /// A prepared statement as the tests prepare it: name, text, parameter types, arguments.
    typealias Statement = (name: String, sql: String, types: String, arguments: String)
    static let finishRound: Statement = ("finish_round", FinishRoundStatement.sql, "(text, text)", "('[]', NULL)")
    static let recordAttempts: Statement = ("record_attempts", RecordAttemptsStatement.sql, "(text)", "('[]')")
    static let leasedDeliveries: Statement = ("leased_deliveries", LeasedDeliveriesStatement.sql, "(int8[], text)", "('{1,2}', 'o')")

    @Test(arguments: [
        CachedPlanTests.finishRound,
        CachedPlanTests.recordAttempts,
        ("claim_deliveries", ClaimDeliveriesStatement.sql, "(int8[], int8, int8, text, float8)", "('{1,2}', 8, 64, 'o', 60)"),
        CachedPlanTests.leasedDeliveries,
        ("claim_verifications", ClaimVerificationsStatement.sql, "(int8, text, float8)", "(64, 'o', 60)"),
    ])
    func aPreparedStatementsCachedPlanReadsNoTableByScanning(name: String, sql: String, types: String, arguments: String) async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let plan = try await Self.genericPlan(name, sql, types, arguments, on: client)
                for table in ["events", "work_items", "deliveries"] {
                    #expect(!plan.contains("Seq Scan on \(table)"), "no sequential scan of \(table) in the cached plan:\n\(plan)")
                }
            }
        }
    }

    /// Statistics taken while the queue was empty (as autovacuum or a quiet hour leaves them)
    /// made the attempt statement's cached plan read every pending delivery, through a queue
    /// index it believed empty, to find a few by id; after a refresh of the statistics it read
    /// every leased one (`deliveries_leased`), which under a backlog is every delivery handed
    /// off and waiting in memory. The attempt statement and the load of handed-off deliveries
    /// reach their deliveries by key, whatever the statistics say.
    @Test(arguments: [
        CachedPlanTests.recordAttempts,
        CachedPlanTests.leasedDeliveries,
    ])
    func aStatementThatFindsDeliveriesByIDReadsThemByKeyWhateverTheStatistics(
        name: String, sql: String, types: String, arguments: String
    ) async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let store = PostgresEventStore(client: client, logger: TestLogger.quiet)
                func fill(_ status: String, leasedTo owner: String?, from first: Int) async throws {
                    _ = try await client.query("""
                        INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint, status)
                        SELECT 'e' || n, 'u' || n, 1, 'token.rotated', now(), '\\x00', 'verified'
                        FROM generate_series(\(first), \(first + 2_999)) n;
                        """, logger: TestLogger.quiet)
                    _ = try await client.query("""
                        INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, status,
                                                lease_owner, lease_expires_at)
                        SELECT 'e' || n, 's', 'u' || n, 1, 'msg_' || n, \(status), \(owner)::text,
                               CASE WHEN \(owner)::text IS NOT NULL THEN now() + interval '1 minute' END
                        FROM generate_series(\(first), \(first + 2_999)) n;
                        """, logger: TestLogger.quiet)
                }
                _ = try await client.query("""
                    INSERT INTO subscriptions (id, url, event_types, ordered, secret)
                    VALUES ('s', 'http://127.0.0.1:9/', '{token.rotated}', true, 'whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3')
                    """, logger: TestLogger.quiet)
                try await fill("delivered", leasedTo: nil, from: 1)
                _ = try await client.query("ANALYZE work_items, deliveries", logger: TestLogger.quiet)
                // A backlog handed off: pending, and leased to the process that waits to send them.
                try await fill("pending", leasedTo: "o", from: 10_001)

                func lookup() async throws -> String {
                    try await client.withConnection { connection in
                        _ = try await connection.query("SET plan_cache_mode = force_generic_plan", logger: TestLogger.quiet)
                        _ = try await connection.query("PREPARE \(unescaped: name)\(unescaped: types) AS \(unescaped: sql)",
                                                       logger: TestLogger.quiet)
                        let plan = try await connection.query("EXPLAIN (COSTS OFF) EXECUTE \(unescaped: name)\(unescaped: arguments)",
                                                              logger: TestLogger.quiet).collect().map { try $0.decode(String.self) }
                        _ = try await connection.query("DEALLOCATE \(unescaped: name)", logger: TestLogger.quiet)
                        // The first scan of `deliveries d`, the one that finds the deliveries by id
                        // (with the line after it, where a bitmap scan names its index).
                        let scan = try #require(plan.firstIndex { $0.contains("Scan") && $0.hasSuffix(" on deliveries d") },
                                                "\(plan.joined(separator: "\n"))")
                        return plan[scan...].prefix(2).joined(separator: "\n")
                    }
                }
                let stale = try await lookup()
                #expect(stale.contains("deliveries_pkey"), "with the statistics of an empty queue: \(stale)")
                try await store.refreshQueueStatistics()
                let refreshed = try await lookup()
                #expect(refreshed.contains("deliveries_pkey"), "once the statistics are refreshed: \(refreshed)")
            }
        }
    }

    /// Under a backlog, with statistics that know it (the refresh at the start of the overload
    /// benchmark), PostgreSQL preferred a custom plan for each verification claim, and both
    /// plans joined the claimed ids to every work item by a sequential scan, the generic one
    /// to every event besides (planning 0.35 ms of nearly every call, and the scans). A claim
    /// reaches the items it locked, and their events, by key, in either plan.
    @Test(arguments: ["force_generic_plan", "force_custom_plan"])
    func aVerificationClaimReachesItsItemsByKeyUnderABacklog(mode: String) async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                _ = try await client.query("""
                    INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint)
                    SELECT 'e' || n, 'u' || n, 1, 'token.rotated', now(), '\\x00' FROM generate_series(1, 3000) n
                    """, logger: TestLogger.quiet)
                _ = try await client.query("""
                    INSERT INTO work_items (kind, event_id, user_id, due_at)
                    SELECT 'verify', 'e' || n, 'u' || n, now() - interval '1 second' FROM generate_series(1, 3000) n
                    """, logger: TestLogger.quiet)
                _ = try await client.query("ANALYZE events, work_items", logger: TestLogger.quiet)
                let plan = try await Self.plan("claim_verifications", ClaimVerificationsStatement.sql, "(int8, text, float8)",
                                               "(16, 'o', 60)", mode: mode, on: client)
                for table in ["events", "work_items"] {
                    #expect(!plan.contains("Seq Scan on \(table)"), "no sequential scan of \(table):\n\(plan)")
                }
            }
        }
    }

    /// The outcome and attempt statements never find a queue's parked head through
    /// `deliveries_parked_at`, the sweeper's index of every parked delivery: with the same
    /// predicate as the queue's `deliveries_parked`, statistics refreshed at the start of the
    /// overload benchmark led their cached plans to it, reading and sorting every parked
    /// delivery for each lookup, half the outcome statement's time (017).
    @Test(arguments: [
        CachedPlanTests.finishRound,
        CachedPlanTests.recordAttempts,
    ])
    func aParkedHeadIsFoundByItsQueueWhateverTheStatistics(name: String, sql: String, types: String, arguments: String) async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                _ = try await client.query("""
                    INSERT INTO subscriptions (id, url, event_types, ordered, secret)
                    VALUES ('s', 'http://127.0.0.1:9/', '{token.rotated}', true, 'whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3')
                    """, logger: TestLogger.quiet)
                func park(from first: Int, count: Int, status: String = "pending") async throws {
                    _ = try await client.query("""
                        INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint, status)
                        SELECT 'e' || n, 'u' || (n % 1000), n, 'token.rotated', now(), '\\x00', 'verified'
                        FROM generate_series(\(first), \(first + count - 1)) n
                        """, logger: TestLogger.quiet)
                    _ = try await client.query("""
                        INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, status, parked_at)
                        SELECT 'e' || n, 's', 'u' || (n % 1000), n, 'msg_' || n, \(status),
                               CASE WHEN \(status) = 'pending' THEN now() END
                        FROM generate_series(\(first), \(first + count - 1)) n
                        """, logger: TestLogger.quiet)
                }
                // Which index the planner prefers depends on statistics: under the overload
                // benchmark it took deliveries_parked_at after a refresh, and not before. So
                // the worst case is made here: the queue's own indexes gone, the statistics
                // those of a drained queue. deliveries_parked_at must still not serve.
                _ = try await client.query("DROP INDEX deliveries_parked", logger: TestLogger.quiet)
                _ = try await client.query("DROP INDEX deliveries_order", logger: TestLogger.quiet)
                try await park(from: 1, count: 3_000, status: "delivered")
                _ = try await client.query("ANALYZE deliveries", logger: TestLogger.quiet)
                try await park(from: 10_001, count: 3_000)
                let plan = try await Self.genericPlan(name, sql, types, arguments, on: client)
                #expect(!plan.contains("deliveries_parked_at"), "not through every parked delivery:\n\(plan)")
            }
        }
    }

    /// The plan a connection caches for `sql` prepared as `name`, as `EXPLAIN` prints it.
    static func genericPlan(_ name: String, _ sql: String, _ types: String, _ arguments: String,
                            on client: PostgresClient) async throws -> String {
        try await plan(name, sql, types, arguments, mode: "force_generic_plan", on: client)
    }

    /// The plan of `sql` prepared as `name`, under `plan_cache_mode = mode`: the generic plan
    /// a connection caches, or the custom one it makes for these arguments.
    static func plan(_ name: String, _ sql: String, _ types: String, _ arguments: String, mode: String,
                     on client: PostgresClient) async throws -> String {
        try await client.withConnection { connection in
            _ = try await connection.query("SET plan_cache_mode = \(unescaped: mode)", logger: TestLogger.quiet)
            _ = try await connection.query("PREPARE \(unescaped: name)\(unescaped: types) AS \(unescaped: sql)", logger: TestLogger.quiet)
            return try await connection.query("EXPLAIN (COSTS OFF) EXECUTE \(unescaped: name)\(unescaped: arguments)",
                                              logger: TestLogger.quiet).collect().map { try $0.decode(String.self) }
        }.joined(separator: "\n")
    }
}
