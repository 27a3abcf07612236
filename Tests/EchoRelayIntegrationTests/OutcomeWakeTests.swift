import EchoRelayCore
@testable import EchoRelayPostgres
import Foundation
import PostgresNIO
import TestSupport
import Testing

/// A verification outcome that makes deliveries due wakes the delivery workers of other
/// processes with a NOTIFY carried by the outcome statement itself, so it commits with the
/// deliveries (the server no longer announces outcomes after their commit).
@Suite struct OutcomeWakeTests {
    @Test func aVerifiedOutcomeNotifiesInsideTheTransactionThatMakesItsDeliveries() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let store = PostgresEventStore(client: client, logger: TestLogger.quiet, wakeOnOutcomes: WakeLimiter(payload: "workers-1"))
                _ = try await store.subscribe(ordered: true)
                try await store.ingest("e1", user: "u")
                let tasks = try await store.claimVerifications(owner: "w", limit: 1, lease: .seconds(60))
                try await database.withClient { listener in
                    try await listener.withConnection { connection in
                        try await connection.listen(on: PostgresWorkNotifications.channel) { notifications in
                            #expect(try await store.finishVerification(try #require(tasks.first), owner: "w", outcome: VerificationOutcome(
                                status: .verified, reason: .providerConfirmed, providerUserID: "u")))
                            // Every row the outcome wrote carries the id of the transaction that wrote it.
                            let writers = try await client.query("""
                                SELECT xmin::text FROM events WHERE id = 'e1'
                                UNION SELECT xmin::text FROM deliveries WHERE event_id = 'e1'
                                """).collect()
                            #expect(writers.count == 1, "the outcome and its delivery in one transaction")
                            var received: String?
                            for try await notification in notifications {
                                received = notification.payload
                                break
                            }
                            #expect(received == "workers-1")
                        }
                    }
                }
                #expect(try await client.count("deliveries", where: "event_id = 'e1'") == 1)
            }
        }
    }
}
