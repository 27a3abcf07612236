import EchoRelayCore
import EchoRelayPostgres
import Foundation
import Logging
import PostgresNIO

/// Claim-and-complete through the store on its own, without HTTP or echo requests: seeded
/// verification items are claimed in batches as the verify worker claims them and each is
/// finished as verified (event updated, token remembered, user state moved, deliveries
/// fanned out to no subscriber).
struct ClaimMeasurement {
    let databases: Databases
    let logger: Logger

    func run(claimers: Int, batch: Int, seconds: Int, seeded: Int) async throws -> (rate: Double, ranDry: Bool) {
        try await databases.recreate("bench_claim")
        return try await databases.withClient(url: try databases.url(of: "bench_claim")) { client in
            _ = try await Migrator(client: client, logger: logger).migrate()
            try await client.query(PostgresQuery(unsafeSQL: """
                INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint)
                SELECT 'seed_' || g, 'c' || (g % 10000), g, 'token.rotated', now(), '\\x00'::bytea
                FROM generate_series(1, \(seeded)) g
                """), logger: logger)
            try await client.query(PostgresQuery(unsafeSQL: """
                INSERT INTO work_items (kind, event_id, due_at)
                SELECT 'verify', 'seed_' || g, now() - interval '1 minute' FROM generate_series(1, \(seeded)) g
                """), logger: logger)
            try await client.query("VACUUM ANALYZE work_items", logger: logger)
            try await client.query("VACUUM ANALYZE events", logger: logger)

            let store = PostgresEventStore(client: client, logger: logger)
            let start = ContinuousClock.now
            let deadline = start + .seconds(seconds)
            let hash = [UInt8](repeating: 7, count: 32)
            let (completed, dry) = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                for claimer in 0..<claimers {
                    group.addTask {
                        var completed = 0
                        while ContinuousClock.now < deadline {
                            let tasks = try await store.claimVerifications(owner: "bench-\(claimer)", limit: batch, lease: .seconds(60))
                            if tasks.isEmpty { return (completed, true) }
                            completed += try await withThrowingTaskGroup(of: Bool.self) { finishes in
                                for task in tasks {
                                    finishes.addTask {
                                        let outcome = VerificationOutcome(
                                            status: .verified, reason: .providerConfirmed, providerUserID: task.userID,
                                            confirmedTokenHash: hash
                                        )
                                        return try await store.finishVerification(task, owner: "bench-\(claimer)", outcome: outcome)
                                    }
                                }
                                return try await finishes.reduce(0) { $0 + ($1 ? 1 : 0) }
                            }
                        }
                        return (completed, false)
                    }
                }
                return try await group.reduce(into: (0, false)) { $0.0 += $1.0; $0.1 = $0.1 || $1.1 }
            }
            let elapsed = ContinuousClock.now - start
            return (Double(completed) / elapsed.secondsDouble, dry)
        }
    }
}
