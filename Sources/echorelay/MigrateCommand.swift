import ArgumentParser
import EchoRelayCore
import EchoRelayPostgres
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

    @Option(help: "PostgreSQL URL. (env: ECHORELAY_DATABASE_URL, required)")
    var databaseURL: String?

    @Flag(help: "Only list pending migrations; change nothing. Exits 1 if any are pending.")
    var check = false

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = try logging.bootstrap(label: "echorelay.migrate")
        let url = try Setting.databaseURL(databaseURL)
        let clientConfiguration: PostgresClient.Configuration
        do throws(DatabaseURLError) {
            clientConfiguration = try DatabaseURL.postgresConfiguration(url.revealed)
        } catch {
            throw ConfigurationError(setting: "ECHORELAY_DATABASE_URL", reason: error.reason)
        }
        try await PostgresClient.withRunning(clientConfiguration, logger: logger) { client in
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
}
