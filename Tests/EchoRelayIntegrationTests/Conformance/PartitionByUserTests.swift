import EchoRelayCore
@testable import EchoRelayPostgres
import Foundation
import PostgresNIO
import TestSupport
import Testing

/// The schema the conformance suite runs on as `postgres partitioned by user` is what it says:
/// each per-user table hash-partitioned by `user_id`, and all of a user's rows, from ingest to
/// delivery, in one partition of each.
@Suite struct PartitionByUserTests {
    @Test func eachPerUserTableIsHashPartitionedByUserAndAUsersRowsShareAPartition() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                try await StoreHarness.migrate(client, for: .postgresByUser)
                let partitioned = try await client.query("""
                    SELECT c.relname::text, pg_get_partkeydef(c.oid), (SELECT count(*) FROM pg_inherits i WHERE i.inhparent = c.oid)
                    FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid ORDER BY 1
                    """).decode((String, String, Int).self).gathered()
                #expect(partitioned.map(\.0) == PartitionByUser.tables.sorted())
                #expect(partitioned.allSatisfy { $0.1 == "HASH (user_id)" && $0.2 == PartitionByUser.partitions }, "\(partitioned)")

                let store = PostgresEventStore(client: client, logger: TestLogger.quiet, ingestWait: .seconds(60))
                _ = try await store.subscribe(ordered: true)
                for user in ["alice", "bob", "carol", "dave"] {
                    for index in 1...3 { try await store.ingest("\(user)-\(index)", user: user) }
                }
                try await store.verifyAll()
                try await store.deliverAll()
                // One more event each, left unverified: its work item stays.
                for user in ["alice", "bob", "carol", "dave"] { try await store.ingest("\(user)-4", user: user) }
                // Each user's rows of every partitioned table, by the partition that holds them.
                let union = PartitionByUser.tables.map { "SELECT tableoid, user_id FROM \($0)" }.joined(separator: " UNION ALL ")
                let placed = try await client.query(PostgresQuery(unsafeSQL: """
                    SELECT user_id, array_agg(DISTINCT tableoid::regclass::text ORDER BY tableoid::regclass::text)
                    FROM (\(union)) placed GROUP BY user_id ORDER BY user_id
                    """)).decode((String, [String]).self).gathered()
                #expect(placed.count == 4)
                for (user, partitions) in placed {
                    let suffixes = Set(partitions.map { $0.split(separator: "_").last.map(String.init) ?? "" })
                    #expect(partitions.count == PartitionByUser.tables.count && suffixes.count == 1,
                            "\(user)'s rows are in one partition of each table: \(partitions)")
                }
                #expect(try await database.count("deliveries", where: "status = 'delivered'") == 12, "each event delivered to the subscription")
            }
        }
    }
}
