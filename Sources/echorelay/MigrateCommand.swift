import ArgumentParser
import EchoRelayCore
import EchoRelayPostgres
import EchoRelaySQLite
import EchoRelayServer
import Logging
import PostgresNIO

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending database migrations, each in its own transaction.",
        discussion: """
            Refuses to run if a migration that was already applied has been edited since: \
            its recorded checksum no longer matches the file.
            """
    )

    @Option(help: "postgres://… or sqlite:PATH. (env: ECHORELAY_DATABASE_URL, default: sqlite:echorelay.sqlite)")
    var databaseURL: String?

    @Flag(help: "Only list pending migrations; change nothing. Exits 1 if any are pending.")
    var check = false

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = try logging.bootstrap(label: "echorelay.migrate")
        let url: Secret
        switch try Setting.database(databaseURL) {
        case .postgres(let postgresURL):
            url = postgresURL
        case .sqlite(let path):
            try await migrateEmbedded(path: path, logger: logger)
            return
        }
        let endpoints: DatabaseEndpoints
        do throws(DatabaseURLError) {
            endpoints = try DatabaseURL.endpoints(url.revealed)
        } catch {
            throw ConfigurationError(setting: "ECHORELAY_DATABASE_URL", reason: error.reason)
        }
        try await DatabaseClient.withRunning(endpoints, logger: logger) { client in
            let migrator = Migrator(client: client, logger: logger)
            if check {
                let pending = try await migrator.pending()
                print(pending.isEmpty ? "up to date" : "pending: " + pending.map(String.init).joined(separator: ", "))
                if !pending.isEmpty { throw ExitCode(1) }
            } else {
                let applied = try await migrator.migrate()
                print(applied.isEmpty ? "up to date" : "applied: " + applied.map(String.init).joined(separator: ", "))
            }
        }
    }

    /// The embedded store: `serve` migrates it at start anyway; this is for `--check` and
    /// for preparing a file before the first start. The file must not be in use.
    private func migrateEmbedded(path: String, logger: Logger) async throws {
        let store = try await SQLiteEventStore.open(path: path, logger: logger)
        do {
            if check {
                let pending = try await store.pendingMigrations()
                try await store.close()
                print(pending.isEmpty ? "up to date" : "pending: " + pending.map(String.init).joined(separator: ", "))
                if !pending.isEmpty { throw ExitCode(1) }
            } else {
                let applied = try await store.migrate()
                try await store.close()
                print(applied.isEmpty ? "up to date" : "applied: " + applied.map(String.init).joined(separator: ", "))
            }
        } catch {
            try? await store.close()
            throw error
        }
    }
}
