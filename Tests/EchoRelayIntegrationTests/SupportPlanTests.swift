import Foundation
@testable import EchoRelayPostgres
import PostgresNIO
import TestSupport
import Testing

/// Support's reads stay index reads however many events are stored: with 100,000 events (a
/// few hundred rejected, unverifiable or pending among them) and a delivery for a third of
/// them, no list filter, no user's timeline and no event's page makes PostgreSQL read the
/// events or the deliveries table through.
@Suite struct SupportPlanTests {
    /// 100,000 events of 5,000 users over 29 days, and the deliveries of the token rotations.
    static func withStoredEvents(_ body: @Sendable (PostgresConnection) async throws -> Void) async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                _ = try await client.query("""
                    INSERT INTO events (id, user_id, sequence, type, occurred_at, received_at, fingerprint, status, status_reason)
                    SELECT 'e' || n, 'u' || (n % 5000), n / 5000 + 1,
                           (ARRAY['token.rotated', 'phone.changed', 'account.deactivated'])[n % 3 + 1],
                           now() - n * interval '25 seconds', now() - n * interval '25 seconds', '\\x00',
                           CASE WHEN n % 500 = 0 THEN 'rejected' WHEN n % 1000 = 1 THEN 'unverifiable'
                                WHEN n < 50 THEN 'pending' ELSE 'verified' END,
                           CASE WHEN n % 500 = 0 THEN 'unknown_token' WHEN n % 1000 = 1 THEN 'provider_unavailable'
                                WHEN n < 50 THEN NULL ELSE 'provider_confirmed' END
                    FROM generate_series(1, 100000) n
                    """, logger: TestLogger.quiet)
                _ = try await client.query("""
                    INSERT INTO subscriptions (id, url, event_types, secret) VALUES ('sub_a', 'https://a.example/', '{token.rotated}', 'whsec_x');
                    """, logger: TestLogger.quiet)
                _ = try await client.query("""
                    INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, status)
                    SELECT id, 'sub_a', user_id, sequence, 'msg_' || id, 'delivered' FROM events WHERE type = 'token.rotated'
                    """, logger: TestLogger.quiet)
                _ = try await client.query("ANALYZE", logger: TestLogger.quiet)
                try await client.withConnection { try await body($0) }
            }
        }
    }

    /// The plan of `sql` run with `arguments` (a parenthesised list), as a custom plan.
    static func plan(_ connection: PostgresConnection, _ sql: String, _ arguments: String) async throws -> String {
        _ = try await connection.query("PREPARE planned AS \(unescaped: sql)", logger: TestLogger.quiet)
        let plan = try await connection.query("EXPLAIN (COSTS OFF) EXECUTE planned\(unescaped: arguments)", logger: TestLogger.quiet)
            .collect().map { try $0.decode(String.self) }.joined(separator: "\n")
        _ = try await connection.query("DEALLOCATE planned", logger: TestLogger.quiet)
        return plan
    }

    static func expectNoTableReadThrough(_ plan: String, _ name: String) {
        for table in ["events", "deliveries"] {
            #expect(!plan.contains("Seq Scan on \(table)"), "\(name): the \(table) table read through:\n\(plan)")
        }
    }

    /// Parameters of `recentEventsSQL`: types, statuses, reasons, since, until,
    /// subscription, cursor time (µs), cursor id, limit; and the index each filter should read.
    static let recentEventsFilters: [(name: String, arguments: String, index: String)] = [
        ("nothing", "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 51)", "events_received"),
        ("a type", "('{account.deactivated}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 51)", "events_received"),
        ("rejected", "(NULL, '{rejected}', NULL, NULL, NULL, NULL, NULL, NULL, 51)", "events_exceptions"),
        ("stuck", "(NULL, '{unverifiable}', NULL, NULL, NULL, NULL, NULL, NULL, 51)", "events_exceptions"),
        ("pending", "(NULL, '{pending}', NULL, NULL, NULL, NULL, NULL, NULL, 51)", "events_pending_user"),
        ("rejected deactivations of the last hour",
         "('{account.deactivated}', '{rejected}', '{unknown_token}', now() - interval '1 hour', NULL, NULL, NULL, NULL, 51)", "events_exceptions"),
        ("a week", "(NULL, NULL, NULL, now() - interval '8 days', now() - interval '1 day', NULL, NULL, NULL, 51)", "events_received"),
        ("a subscription", "(NULL, NULL, NULL, NULL, NULL, 'sub_a', NULL, NULL, 51)", "events_received"),
        ("the next page", "(NULL, NULL, NULL, NULL, NULL, NULL, (extract(epoch FROM now() - interval '3 days') * 1000000)::bigint, 'e5', 51)", "events_received"),
    ]

    /// One database for every filter: each of these costs 100,000 rows, and the suite runs
    /// beside tests that count seconds.
    @Test func everySupportReadGoesThroughAnIndex() async throws {
        try await Self.withStoredEvents { connection in
            let timeline = try await Self.plan(connection, PostgresEventStore.timelineSQL, "('u7', NULL, NULL, NULL, NULL, NULL, 51)")
            Self.expectNoTableReadThrough(timeline, "a user's timeline")
            #expect(timeline.contains("deliveries_original_key") && timeline.contains("deliveries_replay_key"), "\(timeline)")
            let filtered = try await Self.plan(connection, PostgresEventStore.timelineSQL,
                                               "('u7', '{token.rotated}', '{verified}', now() - interval '30 days', now(), 15, 51)")
            Self.expectNoTableReadThrough(filtered, "a user's filtered timeline")
            let deliveries = try await Self.plan(connection, PostgresEventStore.eventDeliveriesSQL, "('e3')")
            Self.expectNoTableReadThrough(deliveries, "an event's deliveries")
            for (name, arguments, index) in Self.recentEventsFilters {
                let plan = try await Self.plan(connection, PostgresEventStore.recentEventsSQL, arguments)
                Self.expectNoTableReadThrough(plan, name)
                #expect(plan.contains(index), "\(name): not read through \(index):\n\(plan)")
            }
        }
    }
}
