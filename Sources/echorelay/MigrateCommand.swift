import ArgumentParser
import EchoRelayServer

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending database migrations, each in its own transaction.",
        discussion: """
            Refuses to run if a migration that was already applied has been edited since: \
            its recorded checksum no longer matches the file.
            """
    )

    @OptionGroup var database: DatabaseOption

    @Flag(help: "Only list pending migrations; change nothing. Exits 1 if any are pending.")
    var check = false

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = try logging.bootstrap(label: "echorelay.migrate")
        // On the embedded store, `serve` migrates at start anyway: this is for `--check` and for
        // preparing a file before the first start (the file must not be in use).
        let (report, pendingLeft) = try await database.location().withStore(logger: logger) { opened in
            if check {
                let pending = try await opened.pendingMigrations()
                return (pending.isEmpty ? "up to date" : "pending: " + Self.list(pending), !pending.isEmpty)
            }
            let applied = try await opened.migrate()
            return (applied.isEmpty ? "up to date" : "applied: " + Self.list(applied), false)
        }
        print(report)
        if pendingLeft { throw ExitCode(1) }
    }

    private static func list(_ migrations: [Int]) -> String {
        migrations.map(String.init).joined(separator: ", ")
    }
}
