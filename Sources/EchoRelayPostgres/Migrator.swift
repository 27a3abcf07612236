import EchoRelaySchema
import PostgresNIO

/// Applies pending migrations, one transaction each, under an advisory lock so several
/// processes starting together migrate once.
public struct Migrator: Sendable {
    /// Any fixed number; it names the lock that serialises migrators on one database.
    static let advisoryLockKey: Int64 = 0x4563_686F_5265_6C61  // "EchoRela"

    let client: DatabaseClient
    let migrations: [Migration]
    let logger: Logger

    public init(client: DatabaseClient, migrations: [Migration] = Migration.postgres, logger: Logger) {
        self.client = client
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.logger = logger
    }

    /// On one server's client, run by the caller.
    public init(client: PostgresClient, migrations: [Migration] = Migration.postgres, logger: Logger) {
        self.init(client: DatabaseClient(client, logger: logger), migrations: migrations, logger: logger)
    }

    /// Applies what is pending and returns the versions it applied.
    @discardableResult
    public func migrate() async throws -> [Int] {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(Self.advisoryLockKey))", logger: logger)
            do {
                let applied = try await apply(on: connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                throw error
            }
        }
    }

    /// The versions not applied yet. Throws if an applied migration was edited or is unknown.
    public func pending() async throws -> [Int] {
        try await client.withConnection { connection in
            let applied = try await appliedChecksums(on: connection, createTable: false)
            return try Migration.pending(migrations, applied: applied).map(\.version)
        }
    }

    private func apply(on connection: PostgresConnection) async throws -> [Int] {
        let pending = try Migration.pending(migrations, applied: try await appliedChecksums(on: connection, createTable: true))
        for migration in pending {
            logger.info("applying migration", metadata: ["migration.version": "\(migration.version)", "migration.name": "\(migration.name)"])
            try await connection.withTransaction(logger: logger) { connection in
                for statement in SQLScript.statements(migration.sql) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("""
                    INSERT INTO schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                    """, logger: logger)
            }
        }
        return pending.map(\.version)
    }

    private func appliedChecksums(on connection: PostgresConnection, createTable: Bool) async throws -> [Int: String] {
        if createTable {
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version    integer PRIMARY KEY,
                    name       text NOT NULL,
                    checksum   text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
        } else {
            let rows = try await connection.query(
                "SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger
            )
            var exists = false
            for try await value in rows.decode(Bool.self) { exists = value }
            if !exists { return [:] }
        }
        var applied: [Int: String] = [:]
        let rows = try await connection.query("SELECT version, checksum FROM schema_migrations", logger: logger)
        for try await (version, checksum) in rows.decode((Int, String).self) {
            applied[version] = checksum
        }
        return applied
    }
}
