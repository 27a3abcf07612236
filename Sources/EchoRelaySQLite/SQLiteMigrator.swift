import EchoRelaySchema
import Logging

/// Applies pending migrations, one transaction each (SQLite's DDL is transactional, so a
/// failing migration leaves nothing behind), recording each version and checksum. The file
/// lock already keeps other processes out, so no further lock is needed.
struct SQLiteMigrator {
    let migrations: [Migration]
    let logger: Logger

    init(migrations: [Migration] = Migration.sqlite, logger: Logger) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.logger = logger
    }

    /// Applies what is pending and returns the versions it applied.
    func migrate(_ db: SQLiteDB) async throws -> [Int] {
        try await db.run("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    INTEGER PRIMARY KEY,
                name       TEXT NOT NULL,
                checksum   TEXT NOT NULL,
                applied_at INTEGER NOT NULL
            ) STRICT
            """)
        let pending = try Migration.pending(migrations, applied: try await appliedChecksums(db))
        for migration in pending {
            logger.info("applying migration", metadata: [
                "migration.version": "\(migration.version)", "migration.name": "\(migration.name)",
            ])
            if migration.turnsForeignKeysOff {
                // Only outside a transaction does the pragma take effect; it is turned back on
                // whatever happens.
                try await db.run("PRAGMA foreign_keys = OFF")
                do {
                    try await apply(migration, db)
                } catch {
                    try await db.run("PRAGMA foreign_keys = ON")
                    throw error
                }
                try await db.run("PRAGMA foreign_keys = ON")
            } else {
                try await apply(migration, db)
            }
        }
        return pending.map(\.version)
    }

    private func apply(_ migration: Migration, _ db: SQLiteDB) async throws {
        try await db.transaction {
            for statement in SQLScript.statements(migration.sql) {
                try await db.run(statement)
            }
            if migration.turnsForeignKeysOff, let broken = try await db.rows("PRAGMA foreign_key_check").first {
                throw SQLiteMigrationError.foreignKeyBroken(version: migration.version, table: try broken.string(0))
            }
            try await db.run(
                "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, ?2, ?3, ?4)",
                [migration.version, migration.name, migration.checksum, db.now]
            )
        }
    }

    /// The versions not applied yet. Throws if an applied migration was edited or is unknown.
    func pending(_ db: SQLiteDB) async throws -> [Int] {
        let exists = try await db.row("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'")
        return try Migration.pending(migrations, applied: exists == nil ? [:] : try await appliedChecksums(db)).map(\.version)
    }

    private func appliedChecksums(_ db: SQLiteDB) async throws -> [Int: String] {
        var applied: [Int: String] = [:]
        for row in try await db.rows("SELECT version, checksum FROM schema_migrations") {
            applied[try row.int(0)] = try row.string(1)
        }
        return applied
    }
}

/// A migration run with foreign keys off left a row whose reference no longer holds; it was
/// rolled back.
enum SQLiteMigrationError: Error, CustomStringConvertible {
    case foreignKeyBroken(version: Int, table: String)

    var description: String {
        switch self {
        case .foreignKeyBroken(let version, let table):
            "migration \(version) would leave a row of \(table) referring to a row that does not exist; nothing was changed"
        }
    }
}
