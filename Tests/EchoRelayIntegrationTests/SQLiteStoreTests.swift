import EchoRelayCore
import EchoRelaySchema
import Foundation
import Logging
import Testing
import TestSupport

@testable import EchoRelaySQLite

#if canImport(Glibc)
import Glibc
#endif

/// The embedded store's own behaviour: the file lock, migrations, settings, pragmas, and a
/// smoke test of the pipeline. Behaviour shared with PostgreSQL is in the conformance suite.
@Suite struct SQLiteStoreTests {
    /// A path in a fresh temporary folder, removed with its WAL files afterwards.
    private func withTemporaryPath<Result>(_ body: (String) async throws -> Result) async throws -> Result {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-sqlite-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await body(folder.appendingPathComponent("echorelay.sqlite").path)
    }

    @Test func aSecondOpenOfTheSameFileIsRefusedUntilTheFirstCloses() async throws {
        try await withTemporaryPath { path in
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            #expect(FileManager.default.fileExists(atPath: path))
            let error = await #expect(throws: SQLiteStoreError.locked(path: path)) {
                try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            }
            let text = try #require(error).description
            #expect(text.contains(path))
            #expect(text.contains("another EchoRelay process"))
            #expect(text.contains("one process only"))
            #expect(text.contains("ECHORELAY_DATABASE_URL=postgres://"))
            // The refused open must not have disturbed the first store.
            #expect(try await store.migrate().count == SchemaFiles.sqlite.count)

            try await store.close()
            let again = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            #expect(try await again.pendingMigrations() == [])
            try await again.close()
        }
    }

    @Test func aLockHeldByAnotherProcessRefusesOpenUntilThatProcessIsKilled() async throws {
        try await withTemporaryPath { path in
            // The shell opens the file, locks it with flock(1) on that descriptor, says so, and
            // becomes `sleep`, which keeps the descriptor and so the lock, like a process that
            // hangs. (flock FILE sleep would leave the lock with `sleep` when flock is killed.)
            let holder = try Spawned("/bin/sh", ["-c", #"exec 9<>"$0" && flock -x 9 && echo locked && exec sleep 30"#, path])
            defer { holder.signal(SIGKILL) }
            let deadline = ContinuousClock.now + .seconds(10)
            while !String(decoding: holder.standardOutput, as: UTF8.self).contains("locked"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(String(decoding: holder.standardOutput, as: UTF8.self).contains("locked"))

            await #expect(throws: SQLiteStoreError.locked(path: path)) {
                try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            }

            holder.signal(SIGKILL)
            try await holder.wait()
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            try await store.close()
        }
    }

    @Test func migrateAppliesEverythingOnceAndRecordsChecksums() async throws {
        try await withTemporaryPath { path in
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            #expect(await store.readiness() != .ready)
            #expect(try await store.pendingMigrations() == SchemaFiles.sqlite.map(\.version))
            #expect(try await store.migrate().count == SchemaFiles.sqlite.count)
            #expect(try await store.migrate().isEmpty)
            #expect(try await store.pendingMigrations() == [])
            #expect(await store.readiness() == .ready)
            let recorded = try await store.session.read { db in
                try await db.rows("SELECT version, checksum FROM schema_migrations").map { (try $0.int(0), try $0.string(1)) }
            }
            #expect(Dictionary(uniqueKeysWithValues: recorded)
                == Dictionary(uniqueKeysWithValues: Migration.sqlite.map { ($0.version, $0.checksum) }))
            try await store.close()
            #expect(await store.readiness() != .ready)
        }
    }

    @Test func anAppliedMigrationThatWasEditedIsRefused() async throws {
        try await withTemporaryPath { path in
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            try await store.migrate()
            let first = try #require(Migration.sqlite.first)
            let edited = Migration(version: first.version, name: first.name, sql: first.sql + "\n-- edited\n")
            let next = Migration(version: 99, name: "099_sqlite_next.sql", sql: "CREATE TABLE should_not_exist (x INTEGER);")
            let error = await #expect(throws: MigrationError.checksumMismatch(version: first.version, name: first.name)) {
                try await store.migrate([edited, next])
            }
            #expect(error?.description.contains("new numbered migration") == true)
            await #expect(throws: MigrationError.self) { try await store.pendingMigrations([edited, next]) }
            let created = try await store.session.read { db in
                try await db.row("SELECT 1 FROM sqlite_schema WHERE name = 'should_not_exist'")
            }
            #expect(created == nil)
            try await store.close()
        }
    }

    @Test func aFailingMigrationLeavesNothingBehind() async throws {
        try await withTemporaryPath { path in
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            let broken = Migration(version: 1, name: "001_sqlite_broken.sql", sql: """
                CREATE TABLE half_done (x INTEGER);
                INSERT INTO half_done VALUES (1);
                INSERT INTO no_such_table VALUES (1);
                """)
            await #expect(throws: (any Error).self) { try await store.migrate([broken]) }
            let left = try await store.session.read { db in
                try await db.rows("SELECT name FROM sqlite_schema WHERE name = 'half_done'").count
                    + (try await db.row("SELECT count(*) FROM schema_migrations")?.int(0) ?? 0)
            }
            #expect(left == 0)
            try await store.close()
        }
    }

    /// 007 makes the events table again without its CHECK on type, with foreign keys off: every
    /// event and delivery stays, the deliveries still refer to their events (a delete still
    /// cascades), foreign keys are on again after, and a type the schema was never told of fits.
    @Test func theEventTypesMigrationKeepsEveryRowAndReferenceAndDropsTheTypeCheck() async throws {
        try await withTemporaryPath { path in
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            _ = try await store.migrate(Migration.sqlite.filter { $0.version < 7 })
            let subscription = try await store.createSubscription(
                SubscriptionFields(url: "https://app.example/hook", eventTypes: [.tokenRotated], ordered: true),
                ownerTokenID: nil, secret: "whsec_c2VjcmV0")
            try await Self.verifiedEvent("evt_1", subscriptionID: subscription.id, in: store)
            let before = try await store.deliveries(eventID: "evt_1").count
            #expect(before == 1)

            #expect(try await store.migrate() == [7, 8, 9, 10, 11, 12, 13, 14, 15, 16])
            let stored = try #require(try await store.event(id: "evt_1"))
            #expect(stored.status == .verified && stored.type == .tokenRotated && stored.sequence == 1)
            #expect(try await store.deliveries(eventID: "evt_1").count == before)
            let (foreignKeys, broken, indexes) = try await store.session.read { db in
                (try await db.row("PRAGMA foreign_keys")?.int(0),
                 try await db.rows("PRAGMA foreign_key_check").count,
                 try await db.rows("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL ORDER BY name")
                    .map { try $0.string(0) })
            }
            #expect(foreignKeys == 1 && broken == 0)
            #expect(indexes == ["events_exceptions", "events_pending_user", "events_received"])
            let remaining = try await store.session.read { db in
                try await db.run("""
                    INSERT INTO events (id, user_id, sequence, type, occurred_at, received_at, fingerprint)
                    VALUES ('evt_new_type', 'user-1', 2, 'email.changed', 0, 0, x'00')
                    """)
                try await db.run("DELETE FROM events WHERE id = 'evt_1'")
                return try await db.row("SELECT count(*) FROM deliveries")?.int(0)
            }
            #expect(remaining == 0, "deleting the event cascades to its delivery")
            try await store.close()
        }
    }

    /// 009 makes the replays table again to let `kind` be `recover`: every replay stays, the
    /// replayed deliveries still refer to theirs (a delete still cascades), and its index is back.
    @Test func theRecoverMigrationKeepsEveryReplayAndItsDeliveries() async throws {
        try await withTemporaryPath { path in
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            _ = try await store.migrate(Migration.sqlite.filter { $0.version < 9 })
            let subscription = try await store.createSubscription(
                SubscriptionFields(url: "https://app.example/hook", eventTypes: [.tokenRotated], ordered: true),
                ownerTokenID: nil, secret: "whsec_c2VjcmV0")
            try await Self.verifiedEvent("evt_1", subscriptionID: subscription.id, in: store)
            let receipt = try await store.replayEvent(id: "evt_1", subscriptionIDs: [subscription.id], actor: .environmentAdmin,
                                                      reason: "before the migration")

            #expect(try await store.migrate() == [9, 10, 11, 12, 13, 14, 15, 16])
            #expect(try await store.replay(id: receipt.id)?.kind == .event)
            #expect(try await store.deliveries(eventID: "evt_1").compactMap(\.replayID) == [receipt.id])
            let (broken, indexes) = try await store.session.read { db in
                (try await db.rows("PRAGMA foreign_key_check").count,
                 try await db.rows("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'replays' AND sql IS NOT NULL")
                    .map { try $0.string(0) })
            }
            #expect(broken == 0 && indexes == ["replays_creating"])
            let remaining = try await store.session.read { db in
                try await db.run("""
                    INSERT INTO replays (id, kind, actor_name, actor_role, reason, matched, created_at)
                    VALUES ('rpl_recover', 'recover', 'a', 'app', 'r', 0, 0)
                    """)
                try await db.run("DELETE FROM replays WHERE id = ?1", [receipt.id])
                return try await db.row("SELECT count(*) FROM deliveries WHERE replay_id IS NOT NULL")?.int(0)
            }
            #expect(remaining == 0, "deleting the replay cascades to its delivery")
            try await store.close()
        }
    }

    /// An event stored and verified, so that it has its deliveries.
    /// A verified event of `user-1` with one pending delivery to `subscriptionID`, written as
    /// the first schema holds them: these tests run before the newest migrations, whose columns
    /// the store's own ingest and outcome statements write.
    static func verifiedEvent(_ id: String, subscriptionID: String, in store: SQLiteEventStore) async throws {
        try await store.session.write { db in
            try await db.run("INSERT INTO user_sequences (user_id, last_sequence) VALUES ('user-1', 1)")
            try await db.run("""
                INSERT INTO events (id, user_id, sequence, type, occurred_at, received_at, fingerprint, status, status_reason,
                                    verified_at, decided_at, provider_user_id)
                VALUES (?1, 'user-1', 1, 'token.rotated', ?2, ?2, ?3, 'verified', 'provider_confirmed', ?2, ?2, 'user-1')
                """, [id, db.now, Blob(Array(repeating: 1, count: 32))])
            try await db.run("""
                INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, due_at, created_at)
                VALUES (?1, ?2, 'user-1', 1, 'msg_' || ?1, ?3, ?3)
                """, [id, subscriptionID, db.now])
        }
    }

    @Test func settingsKeepTheFirstValueAcrossRestarts() async throws {
        try await withTemporaryPath { path in
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            try await store.migrate()
            #expect(try await store.setting("ingest_secret") == nil)
            #expect(try await store.insertSettingIfAbsent("ingest_secret", value: "first") == "first")
            #expect(try await store.insertSettingIfAbsent("ingest_secret", value: "second") == "first")
            try await store.close()

            let reopened = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            #expect(try await reopened.setting("ingest_secret") == "first")
            try await reopened.close()
        }
    }

    @Test func theConnectionUsesWALForeignKeysAndFullSync() async throws {
        try await withTemporaryPath { path in
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            let pragmas = try await store.session.read { db in
                [try await db.row("PRAGMA journal_mode")?.string(0) ?? "",
                 String(try await db.row("PRAGMA foreign_keys")?.int(0) ?? -1),
                 String(try await db.row("PRAGMA synchronous")?.int(0) ?? -1),
                 String(try await db.row("PRAGMA busy_timeout")?.int(0) ?? -1)]
            }
            #expect(pragmas == ["wal", "1", "2", "5000"])
            try await store.close()
            await #expect(throws: StoreError.self) { try await store.setting("x") }
        }
    }

    @Test func theEmbeddedListMatchesTheSchemaFolder() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Schema/sqlite").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(SchemaFiles.sqlite.map(\.name) == files)
        for file in SchemaFiles.sqlite {
            #expect(file.version == Int(file.name.prefix(3)))
            #expect(file.name.contains("_sqlite_"))
            #expect(file.sql == (try String(contentsOf: folder.appendingPathComponent(file.name), encoding: .utf8)))
        }
    }

    @Test func anEventGoesFromIngestThroughVerificationToAClaimableDelivery() async throws {
        try await withTemporaryPath { path in
            let store = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            try await store.migrate()
            let subscription = try await store.createSubscription(
                SubscriptionFields(url: "https://app.example/hook", eventTypes: [.phoneChanged], ordered: true),
                ownerTokenID: nil, secret: "whsec_c2VjcmV0"
            )
            let occurredAt = try #require(RFC3339.parse("2024-05-01T12:00:00.123456Z"))
            func event(_ id: String, phone: String, fingerprint: UInt8) -> IncomingEvent {
                IncomingEvent(
                    id: id, type: .phoneChanged, userID: "user-1", occurredAt: occurredAt, phoneNumber: phone,
                    echo: EchoCredentials(serviceProvider: "https://api.digits.com/1.1/sdk/account.json",
                                          authorization: Secret("OAuth oauth_consumer_key=\"k\"")),
                    fingerprint: Array(repeating: fingerprint, count: 32)
                )
            }
            #expect(try await store.ingest(event("evt_1", phone: "+15555550100", fingerprint: 1))
                == IngestReceipt(id: "evt_1", sequence: 1, isDuplicate: false))
            #expect(try await store.ingest(event("evt_1", phone: "+15555550100", fingerprint: 1))
                == IngestReceipt(id: "evt_1", sequence: 1, isDuplicate: true))
            await #expect(throws: IngestError.conflict(id: "evt_1")) {
                try await store.ingest(event("evt_1", phone: "+15555550199", fingerprint: 2))
            }
            #expect(try await store.ingest(event("evt_2", phone: "+15555550101", fingerprint: 3)).sequence == 2)

            let claimed = try await store.claimVerifications(owner: "w1", limit: 10, lease: .seconds(60))
            #expect(claimed.map(\.eventID) == ["evt_1", "evt_2"])
            #expect(claimed.allSatisfy { $0.attempts == 1 && $0.echo != nil })
            #expect(try await store.claimVerifications(owner: "w2", limit: 10, lease: .seconds(60)).isEmpty)
            let first = try #require(claimed.first)
            #expect(try await store.finishVerification(first, owner: "w2", outcome: .rejected(.tokenInvalid)) == false)
            let verified = VerificationOutcome(status: .verified, reason: .providerConfirmed, providerUserID: "user-1",
                                               providerPhoneNumber: "+15555550100", confirmedTokenHash: Array(repeating: 7, count: 32))
            #expect(try await store.finishVerification(first, owner: "w1", outcome: verified))

            let stored = try #require(try await store.event(id: "evt_1"))
            #expect(stored.status == .verified && stored.providerPhoneNumber == "+15555550100" && stored.verifiedAt != nil)
            #expect(stored.occurredAt == occurredAt)
            #expect(try await store.isTokenConfirmed(userID: "user-1", tokenHash: Array(repeating: 7, count: 32)))
            #expect(try await store.user(id: "user-1")?.phoneNumber == "+15555550100")
            let erased = try await store.session.read { db in
                try await db.row("SELECT echo_authorization IS NULL AND echo_service_provider IS NULL FROM events WHERE id = 'evt_1'")?.bool(0)
            }
            #expect(erased == true)

            let deliveries = try await store.claimDeliveries(owner: "d1", limit: 10, lease: .seconds(60), perSubscriptionCap: 4, answered: [])
            let delivery = try #require(deliveries.first)
            #expect(deliveries.count == 1)
            #expect(delivery.eventID == "evt_1" && delivery.subscriptionID == subscription.id && delivery.attempts == 1)
            #expect(delivery.webhookID == WebhookID.make(eventID: "evt_1", subscriptionID: subscription.id))
            #expect(delivery.secrets.map(\.revealed) == ["whsec_c2VjcmV0"])
            guard case .object(let body)? = try? JSONValue.parse(delivery.body()) else {
                Issue.record("the body is not a JSON object")
                return
            }
            #expect(body["type"] == .string("phone.changed"))
            #expect(body["event_id"] == .string("evt_1"))
            #expect(body["user_id"] == .string("user-1"))
            #expect(body["sequence"] == .integer(1))
            #expect(body["occurred_at"] == .string("2024-05-01T12:00:00.123456Z"))
            #expect(body["data"] == .object(["phone_number": .string("+15555550100")]))

            #expect(try await store.recordDeliveryAttempt(
                delivery, owner: "d1",
                attempt: DeliveryAttempt(startedAt: Date(), duration: .milliseconds(12), statusCode: 204, errorKind: nil,
                                         error: nil, responseHead: nil),
                next: .delivered, disableAfter: .seconds(3600)))
            let records = try await store.deliveries(eventID: "evt_1")
            #expect(records.map(\.status) == [.delivered])
            #expect(records.first?.attempts.map(\.statusCode) == [204])
            try await store.close()
        }
    }
}
