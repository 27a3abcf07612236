import Crypto
import Foundation

/// One numbered migration and the SHA-256 checksum that pins its text once applied. Both
/// stores' migrators use it, with the same rules for what is pending and what is refused.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Whether the file starts with `-- echorelay: foreign keys off`: SQLite's migrator then
    /// turns foreign-key enforcement off around it (a table made again, whose drop would
    /// otherwise cascade) and checks every foreign key before it commits.
    public var turnsForeignKeysOff: Bool {
        sql.hasPrefix("-- echorelay: foreign keys off\n")
    }

    public var checksum: String {
        SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The migrations this build carries, from `Schema/postgres` and `Schema/sqlite`.
    public static let postgres: [Migration] = SchemaFiles.postgres.map(Migration.init)
    public static let sqlite: [Migration] = SchemaFiles.sqlite.map(Migration.init)

    init(_ file: SchemaFiles.File) {
        self.init(version: file.version, name: file.name, sql: file.sql)
    }

    /// Of `migrations`, those not yet in `applied` (version → recorded checksum), in
    /// version order. Throws if an applied one was edited since, or is one this build does
    /// not know.
    public static func pending(_ migrations: [Migration], applied: [Int: String]) throws(MigrationError) -> [Migration] {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, checksum) in applied.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else { throw .unknownVersion(version) }
            guard migration.checksum == checksum else { throw .checksumMismatch(version: version, name: migration.name) }
        }
        return migrations.filter { applied[$0.version] == nil }.sorted { $0.version < $1.version }
    }
}

public enum MigrationError: Error, Equatable, CustomStringConvertible {
    /// An applied migration's file no longer matches what was applied.
    case checksumMismatch(version: Int, name: String)
    /// The database has a migration this build does not know: it was migrated by a newer echorelay.
    case unknownVersion(Int)

    public var description: String {
        switch self {
        case .checksumMismatch(let version, let name):
            "migration \(version) (\(name)) was changed after it was applied to this database; "
                + "restore the original file and put the change in a new numbered migration"
        case .unknownVersion(let version):
            "the database has migration \(version), which this echorelay does not know; "
                + "it was migrated by a newer version: run that version, or restore an older database"
        }
    }
}
