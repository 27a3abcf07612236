import ArgumentParser
import EchoRelayCore
import EchoRelayServer
import Hummingbird
import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the EchoRelay server: the ingest endpoint and the API.",
        discussion: "SIGTERM or SIGINT stops it gracefully: in-flight requests finish first."
    )

    @Option(help: "Address to listen on. (env: ECHORELAY_HOST, default: 127.0.0.1)")
    var host: String?

    @Option(help: "Port to listen on. (env: ECHORELAY_PORT, default: 8080)")
    var port: Int?

    @Option(help: "PostgreSQL URL, postgres://user:password@host:5432/database[?sslmode=disable|prefer|require]. (env: ECHORELAY_DATABASE_URL, required)")
    var databaseURL: String?

    @Option(help: "Comma-separated whsec_ secrets the identity provider signs events with; any one of them is accepted, for rotation. (env: ECHORELAY_INGEST_SECRETS, required)")
    var ingestSecrets: String?

    @Option(help: "Bearer token with the admin role. (env: ECHORELAY_ADMIN_TOKEN)")
    var adminToken: String?

    @Flag(help: "Do not apply pending database migrations at start-up (run `echorelay migrate` yourself). (env: ECHORELAY_NO_MIGRATE=1)")
    var noMigrate = false

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = try logging.bootstrap(label: "echorelay")
        let configuration = ServerConfiguration(
            host: Setting.value(host, "ECHORELAY_HOST") ?? "127.0.0.1",
            port: try Setting.integer(port, "ECHORELAY_PORT", default: 8080),
            databaseURL: try Setting.databaseURL(databaseURL),
            ingestSecrets: Setting.list(ingestSecrets, "ECHORELAY_INGEST_SECRETS").map(Secret.init),
            adminToken: Setting.value(adminToken, "ECHORELAY_ADMIN_TOKEN").map(Secret.init),
            migrateAtStart: !(noMigrate || Setting.value(nil, "ECHORELAY_NO_MIGRATE") == "1")
        )
        let app = try EchoRelayServer.makeApplication(configuration, logger: logger)
        try await app.runService()  // SIGTERM and SIGINT shut down gracefully
    }
}
