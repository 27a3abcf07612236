import Crypto
import EchoRelayCore
@testable import EchoRelayPostgres
@testable import EchoRelaySQLite
import Foundation
import Logging
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// What group commit could get wrong, shown on batches written exactly as a flush writes them:
/// the same id twice in one batch, one bad event among good ones, and (through the HTTP API)
/// a request whose deadline passes while it is queued.
@Suite struct IngestBatchTests {
    static func event(_ id: String, user: String, body: String = "", phone: String? = nil) -> IncomingEvent {
        IncomingEvent(
            id: id, type: .tokenRotated, userID: user, occurredAt: Date(timeIntervalSince1970: 1_800_000_000), phoneNumber: phone,
            echo: EchoCredentials(serviceProvider: "https://api.example.com/1.1/sdk/account.json",
                                  authorization: Secret("OAuth oauth_token=\"t-\(id)\"")),
            fingerprint: Array(SHA256.hash(data: Data((id + "|" + body).utf8)))
        )
    }

    /// Writes one batch as the ingest completer's flush does.
    struct WriteBatch: Sendable {
        let store: any CompletionStatements
        func callAsFunction(_ events: [IncomingEvent]) async throws -> [Result<IngestReceipt, any Error>] {
            try await store.writeIngests(within: .seconds(60), handOff: { _ in nil }) { events }.map { $0.map(\.receipt) }
        }
    }

    static func withPostgres(_ body: @Sendable (WriteBatch, TestDatabase) async throws -> Void) async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                try await body(WriteBatch(store: PostgresEventStore(client: client, logger: TestLogger.quiet)), database)
            }
        }
    }

    static func withSQLite(_ body: @Sendable (WriteBatch, SQLiteEventStore) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-batch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteEventStore.open(path: folder.appendingPathComponent("echorelay.sqlite").path, logger: TestLogger.quiet)
        do {
            try await store.migrate()
            try await body(WriteBatch(store: store), store)
            try await store.close()
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// Both stores, each checked by the same assertions on what the batch answered and stored.
    static func onEachStore(_ body: @Sendable (WriteBatch, _ storedIDs: @Sendable () async throws -> [String: Int64]) async throws -> Void) async throws {
        try await withPostgres { write, database in
            try await body(write) {
                try await database.withClient { client in
                    var ids: [String: Int64] = [:]
                    for try await (id, sequence) in try await client.query("SELECT id, sequence FROM events").decode((String, Int64).self) {
                        ids[id] = sequence
                    }
                    let items = try await client.query("SELECT count(*) FROM work_items").collect().first?.decode(Int.self)
                    #expect(items == ids.count, "one work item per stored event")
                    return ids
                }
            }
        }
        try await withSQLite { write, store in
            try await body(write) {
                var ids: [String: Int64] = [:]
                for id in ["a", "b", "c", "d", "e1", "e2", "same", "clash", "good1", "good2", "bad"] {
                    if let event = try await store.event(id: id) { ids[id] = event.sequence }
                }
                return ids
            }
        }
    }

    @Test func theSameIDTwiceInOneBatchWithTheSameBodyIsOneEventWithOneReceiptForBoth() async throws {
        try await Self.onEachStore { write, stored in
            let results = try await write([Self.event("a", user: "u"), Self.event("same", user: "u"), Self.event("same", user: "u")])
            let receipts = try results.map { try $0.get() }
            #expect(receipts[1].sequence == receipts[2].sequence, "both copies answered with the one stored sequence")
            #expect([receipts[1].isDuplicate, receipts[2].isDuplicate] == [false, true])
            #expect(try await stored() == ["a": 1, "same": 2])
        }
    }

    @Test func theSameIDTwiceInOneBatchWithAnotherBodyIsOneEventAndOneConflict() async throws {
        try await Self.onEachStore { write, stored in
            let results = try await write([Self.event("clash", user: "u"), Self.event("clash", user: "u", body: "other"), Self.event("b", user: "u")])
            #expect(try results[0].get().isDuplicate == false)
            #expect(throws: IngestError.conflict(id: "clash")) { try results[1].get() }
            #expect(try results[2].get().sequence == 2, "the conflict took no sequence number")
            #expect(try await stored() == ["clash": 1, "b": 2])
        }
    }

    @Test func aConflictWithAnEventStoredBeforeLeavesTheRestOfItsBatchStored() async throws {
        try await Self.onEachStore { write, stored in
            _ = try await write([Self.event("c", user: "u")])
            let results = try await write([Self.event("d", user: "v"), Self.event("c", user: "u", body: "other"), Self.event("e1", user: "u")])
            #expect(try results[0].get().sequence == 1)
            #expect(throws: IngestError.conflict(id: "c")) { try results[1].get() }
            #expect(try results[2].get().sequence == 2)
            #expect(try await stored() == ["c": 1, "d": 1, "e1": 2])
        }
    }

    /// PostgreSQL refuses a NUL in text: that event fails alone, with nothing of it written,
    /// and the events around it in the batch are stored with gapless sequences.
    @Test func anEventTheDatabaseRefusesFailsAloneAndTheRestOfItsBatchIsStored() async throws {
        try await Self.withPostgres { write, database in
            let results = try await write([
                Self.event("good1", user: "u"), Self.event("bad", user: "u", phone: "+1555\u{0}0100"), Self.event("good2", user: "u"),
            ])
            #expect(try results[0].get().sequence == 1)
            #expect(throws: StoreError.self) { try results[1].get() }
            #expect(try results[2].get().sequence == 2, "the refused event took no sequence number")
            #expect(try await database.withClient { try await $0.ingestRowCounts() } == ["events": 2, "work_items": 2, "user_sequences": 1])
        }
    }
}

extension IngestBatchTests {
    /// A request still queued when its wait runs out — the flush ahead of it is stuck on a
    /// row lock — is answered 503 with Retry-After, is never written, and its retry is accepted.
    @Test func aRequestQueuedPastItsDeadlineIsA503StoresNothingAndItsRetryIsAccepted() async throws {
        // Long enough that an ingest on a machine busy with the rest of the suite is not refused
        // by accident; short enough for a test. The stuck flush is abandoned at twice this
        // after it began, and the queued request must reach its deadline before that (or a new
        // committer would take it): so the watcher is connected before the flush begins, and
        // sees it wait within a fraction of this.
        try await LiveServer.run(ingestWait: .seconds(5)) { server in
            #expect(try await server.ingest(eventBody(id: "evt_first", userID: "held")).status == 202)
            let queued = eventBody(id: "evt_queued", userID: "free")
            try await server.database.withClient { watcher in
                _ = try await watcher.query("SELECT 1", logger: TestLogger.quiet)  // connects now, not while the flush waits
                try await server.database.withClient { client in
                    try await client.withTransaction(logger: TestLogger.quiet) { lock in
                        // Holds the user's sequence row: the next flush, which writes this user, waits on it.
                        _ = try await lock.query("SELECT 1 FROM user_sequences WHERE user_id = 'held' FOR UPDATE", logger: TestLogger.quiet)
                        let sent = ContinuousClock.now
                        async let stuck = server.ingest(eventBody(id: "evt_stuck", userID: "held"))
                        // Until its flush has taken it and waits on the lock (a fixed pause was
                        // too short on a loaded machine: the queued request then went first, alone).
                        // Only the ingest statement counts: the flush must have taken its batch.
                        try await Self.waitForAnIngestWaitingOnALock(watcher)
                        let waitedFor = ContinuousClock.now - sent
                        #expect(waitedFor < .seconds(5), "the queued request's deadline must come before the stuck flush is abandoned")
                        let refused = try await server.ingest(queued)
                        #expect(refused.status == 503)
                        #expect(refused.headers["Retry-After"].first != nil)
                        #expect(refused.json?["type"] as? String == "urn:echorelay:problem:unavailable")
                        #expect(try await stuck.status == 503, "past its deadline too, though its flush may still write it")
                    }
                }
            }
            // The lock is gone: the stuck flush finishes. The queued request was never written.
            var counts = try await server.rowCounts()
            let deadline = ContinuousClock.now + .seconds(10)
            while counts["events"] != 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                counts = try await server.rowCounts()
            }
            #expect(counts == ["events": 2, "work_items": 2, "user_sequences": 1], "evt_first and evt_stuck, not evt_queued")
            let retried = try await server.ingest(queued)
            #expect(retried.status == 202)
            #expect(retried.json?["sequence"] as? Int == 1)
            #expect(try await server.rowCounts() == ["events": 3, "work_items": 3, "user_sequences": 2])
        }
    }
}

extension IngestBatchTests {
    /// Returns once an ingest statement waits on a row lock.
    static func waitForAnIngestWaitingOnALock(_ watcher: PostgresClient) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            var waiting = 0
            for try await count in try await watcher.query(
                "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO events%'",
                logger: TestLogger.quiet
            ).decode(Int.self) { waiting = count }
            if waiting > 0 { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestSetupError("the stuck ingest's flush never waited on the lock")
    }
}

extension IngestBatchTests {
    /// An ingest-only process wakes the workers of other processes with a NOTIFY carried by
    /// the ingest statement itself (so it commits with the event: one transaction, no NOTIFY
    /// commit of its own), and the rows of a lone event are written by one transaction.
    @Test func aLoneEventIsOneTransactionThatAlsoWakesOtherProcesses() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let store = PostgresEventStore(client: client, logger: TestLogger.quiet, wakeOtherProcesses: WakeLimiter(payload: "ingest-1"))
                _ = try await store.ingest(Self.event("warm", user: "u"))  // prepares the statement on its connection
                try await database.withClient { listener in
                    try await listener.withConnection { connection in
                        try await connection.listen(on: PostgresWorkNotifications.channel) { notifications in
                            try await Task.sleep(for: .milliseconds(20))  // past the limiter's interval
                            _ = try await store.ingest(Self.event("lone", user: "u"))
                            // Every row the ingest wrote carries the id of the transaction that wrote it.
                            let writers = try await client.query("""
                                SELECT xmin::text FROM events WHERE id = 'lone'
                                UNION SELECT xmin::text FROM work_items WHERE event_id = 'lone'
                                UNION SELECT xmin::text FROM user_sequences WHERE user_id = 'u'
                                """).collect()
                            #expect(writers.count == 1, "the event, its work item and its sequence in one transaction")
                            var received: String?
                            for try await notification in notifications {
                                received = notification.payload
                                break
                            }
                            #expect(received == "ingest-1")
                        }
                    }
                }
            }
        }
    }
}

extension IngestBatchTests {
    /// A prepared statement's plan is cached for the connection's life, made once while the
    /// tables may be small: the ingest statement's plan must not read `events` (a sequential
    /// scan made cheap by an empty table would grow dearer with every event stored).
    @Test func theIngestStatementsCachedPlanReadsNoTableByScanning() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                try await client.withConnection { connection in
                    _ = try await connection.query("SET plan_cache_mode = force_generic_plan", logger: TestLogger.quiet)
                    _ = try await connection.query("""
                        PREPARE ingest(text[], text[], text[], timestamptz[], bytea[], text[], text[], text[], text, text, float8) AS
                        \(unescaped: IngestStatement.sql)
                        """, logger: TestLogger.quiet)
                    let plan = try await connection.query(
                        "EXPLAIN (COSTS OFF) EXECUTE ingest('{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', NULL, NULL, NULL)", logger: TestLogger.quiet
                    ).collect().map { try $0.decode(String.self) }.joined(separator: "\n")
                    #expect(plan.contains("Insert on events"), "the plan shown is the statement's:\n\(plan)")
                    #expect(!plan.contains("Seq Scan"), "no sequential scan in the cached plan:\n\(plan)")
                }
            }
        }
    }
}
