import EchoRelayPostgres
import EchoRelaySchema
import Foundation
import Logging
import PostgresNIO
import Testing
import TestSupport

@testable import EchoRelayPostgres

@Suite struct MigratorTests {
    @Test func appliesPendingMigrationsOnceAndRecordsTheirChecksums() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client async throws in
                let migrator = Migrator(client: client, logger: TestLogger.quiet)
                #expect(try await migrator.pending() == Migration.postgres.map(\.version))
                #expect(try await migrator.migrate() == Migration.postgres.map(\.version))
                #expect(try await migrator.migrate() == [])
                #expect(try await migrator.pending() == [])
                var recorded: [Int: String] = [:]
                for try await (version, checksum) in try await client.query("SELECT version, checksum FROM schema_migrations")
                    .decode((Int, String).self) { recorded[version] = checksum }
                #expect(recorded == Dictionary(uniqueKeysWithValues: Migration.postgres.map { ($0.version, $0.checksum) }))
                #expect(try await client.count("events") == 0)
            }
        }
    }

    /// JIT compilation took ~30 ms of a sub-millisecond claim once many deliveries were due
    /// (008_no_jit.sql): a migrated database's new sessions run without it.
    @Test func aMigratedDatabasesSessionsRunWithoutJITCompilation() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client async throws in
                #expect(try await client.query("SHOW jit").collect().first?.decode(String.self) == "on", "the server's default")
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
            }
            try await database.withClient { fresh async throws in
                #expect(try await fresh.query("SHOW jit").collect().first?.decode(String.self) == "off")
            }
        }
    }

    /// The event types are the code's registry's (011_event_types.sql): the schema lists none,
    /// so adding a type to the registry needs no migration.
    @Test func theSchemaTakesAnEventTypeItWasNeverTold() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client async throws in
                try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                try await insertEvent("evt_new_type", type: "email.changed", client)
                #expect(try await client.count("events") == 1)
            }
        }
    }

    /// 015_no_parent_locks.sql drops the foreign keys into events and subscriptions (each new
    /// work item and delivery locked its parent's row); what they guaranteed, that no parent
    /// goes while rows point at it, holds because deleting either table's rows is refused.
    @Test func eventsAndSubscriptionsRefuseDeletesNowThatNoForeignKeyGuardsThem() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client async throws in
                try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                try await insertEvent("evt_kept", type: "token.rotated", client)
                var keys: [String] = []
                for try await name in try await client.query("""
                    SELECT conname::text FROM pg_constraint
                    WHERE contype = 'f' AND confrelid IN ('events'::regclass, 'subscriptions'::regclass)
                      AND conrelid IN ('work_items'::regclass, 'deliveries'::regclass)
                    """).decode(String.self) { keys.append(name) }
                #expect(keys == [], "no foreign key of the hot path's rows locks their parent")
                for statement in ["DELETE FROM events", "TRUNCATE events CASCADE", "DELETE FROM subscriptions WHERE id = 'none'"] {
                    let error = await #expect(throws: PSQLError.self, "\(statement)") {
                        try await client.query(PostgresQuery(unsafeSQL: statement))
                    }
                    #expect(error?.serverInfo?[.sqlState] == "23001", "\(statement): restrict_violation")
                    #expect(error?.serverInfo?[.message]?.contains("never deleted") == true)
                }
                #expect(try await client.count("events") == 1)
            }
        }
    }

    @Test func refusesADatabaseWhereAnAppliedMigrationWasEdited() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client async throws in
                try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let first = try #require(Migration.postgres.first)
                let edited = Migration(version: first.version, name: first.name, sql: first.sql + "\n-- edited\n")
                let next = Migration(version: 99, name: "099_next.sql", sql: "CREATE TABLE should_not_exist (x int);")
                let migrator = Migrator(client: client, migrations: [edited, next], logger: TestLogger.quiet)
                await #expect(throws: MigrationError.checksumMismatch(version: first.version, name: first.name)) {
                    try await migrator.migrate()
                }
                #expect(try await tableExists("should_not_exist", client) == false)
                let error = MigrationError.checksumMismatch(version: 1, name: "001_initial.sql")
                #expect(error.description.contains("001_initial.sql"))
                #expect(error.description.contains("new numbered migration"))
            }
        }
    }

    @Test func refusesADatabaseMigratedByANewerVersion() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client async throws in
                try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                try await client.query("INSERT INTO schema_migrations (version, name, checksum) VALUES (999, 'future.sql', 'x')")
                await #expect(throws: MigrationError.unknownVersion(999)) {
                    try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                }
            }
        }
    }

    @Test func aFailingMigrationLeavesNothingBehind() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client async throws in
                let broken = Migration(version: 1, name: "001_broken.sql", sql: """
                    CREATE TABLE half_done (x int);
                    INSERT INTO half_done VALUES (1);
                    SELECT 1 / 0;
                    """)
                await #expect(throws: (any Error).self) {
                    try await Migrator(client: client, migrations: [broken], logger: TestLogger.quiet).migrate()
                }
                #expect(try await tableExists("half_done", client) == false)
                #expect(try await client.count("schema_migrations") == 0)
            }
        }
    }

    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        try await TestDatabase.withFresh { database in
            let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await database.withClient { try await Migrator(client: $0, logger: TestLogger.quiet).migrate() }
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(applied.sorted() == Migration.postgres.map(\.version))
        }
    }

    @Test func theEmbeddedListMatchesTheSchemaFolder() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Schema/postgres").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(SchemaFiles.postgres.map(\.name) == files)
        for file in SchemaFiles.postgres {
            #expect(file.version == Int(file.name.prefix(3)))
            #expect(file.sql == (try String(contentsOf: folder.appendingPathComponent(file.name), encoding: .utf8)))
        }
    }

    /// An event row as ingest stores one, written by hand.
    private func insertEvent(_ id: String, type: String, _ client: PostgresClient) async throws {
        try await client.query("""
            INSERT INTO events (id, user_id, sequence, type, occurred_at, received_at, fingerprint)
            VALUES (\(id), 'user-1', 1, \(type), now(), now(), '\\x00'::bytea)
            """)
    }

    private func tableExists(_ name: String, _ client: PostgresClient) async throws -> Bool {
        for try await exists in try await client.query("SELECT to_regclass(\(name)) IS NOT NULL").decode(Bool.self) {
            return exists
        }
        return false
    }
}

@Suite struct SQLScriptTests {
    @Test func splitsOnSemicolonsOutsideQuotesCommentsAndDollarBodies() {
        let script = """
            -- a comment; not a statement
            CREATE TABLE a (x text DEFAULT ';');
            /* block; comment */ CREATE TABLE "b;c" (y int);
            CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
            INSERT INTO a VALUES ('it''s; fine');
            -- trailing comment
            """
        let statements = SQLScript.statements(script)
        #expect(statements.count == 4)
        #expect(statements[0].hasSuffix("CREATE TABLE a (x text DEFAULT ';')"))
        #expect(statements[1].contains(#""b;c""#))
        #expect(statements[2].contains("$body$ SELECT 1; $body$"))
        #expect(statements[3] == "INSERT INTO a VALUES ('it''s; fine')")
    }

    @Test func sqliteQuotedIdentifiersDoNotSplitAndPostgresArrayTypesStayWhole() {
        let script = "CREATE TABLE `a;b` (x TEXT, [c;d] TEXT); CREATE TABLE e (f text[] NOT NULL);"
        #expect(SQLScript.statements(script) == ["CREATE TABLE `a;b` (x TEXT, [c;d] TEXT)", "CREATE TABLE e (f text[] NOT NULL)"])
    }
}
