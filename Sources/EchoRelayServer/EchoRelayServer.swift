import EchoRelayCore
import EchoRelayHTTP
import EchoRelayPostgres
import Hummingbird
import Logging
import PostgresNIO
import ServiceLifecycle

/// Builds the `serve` process: the PostgreSQL client, the store and the HTTP application,
/// as one Hummingbird application whose services start and stop together.
public enum EchoRelayServer {
    public typealias App = Application<RouterResponder<EchoRelayRequestContext>>

    public static func makeApplication(
        _ configuration: ServerConfiguration, logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> App {
        let secrets = try configuration.ingestSecrets.map { secret in
            do throws(WebhookSecretError) {
                return try WebhookSecret(secret.revealed)
            } catch {
                throw ConfigurationError(setting: "ECHORELAY_INGEST_SECRETS", reason: error.description)
            }
        }
        guard !secrets.isEmpty else {
            throw ConfigurationError(
                setting: "ECHORELAY_INGEST_SECRETS",
                reason: "at least one whsec_ secret is required to accept events (generate one with: echorelay secret)"
            )
        }
        let databaseConfiguration: PostgresClient.Configuration
        do throws(DatabaseURLError) {
            databaseConfiguration = try DatabaseURL.postgresConfiguration(configuration.databaseURL.revealed)
        } catch {
            throw ConfigurationError(setting: "ECHORELAY_DATABASE_URL", reason: error.reason)
        }
        if configuration.adminToken == nil {
            logger.warning("ECHORELAY_ADMIN_TOKEN is not set: the admin API refuses every request")
        }

        let client = PostgresClient(configuration: databaseConfiguration, backgroundLogger: logger)
        let store = PostgresEventStore(client: client, logger: logger)
        let router = buildRouter(HTTPDependencies(
            store: store, ingestSecrets: secrets, authorizer: BearerAuthorizer(adminToken: configuration.adminToken)
        ))
        var app = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "EchoRelay"),
            services: [client],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        if configuration.migrateAtStart {
            app.beforeServerStarts {
                let applied = try await Migrator(client: client, logger: logger).migrate()
                logger.info("database schema is current", metadata: ["migrations.applied": "\(applied)"])
            }
        }
        return app
    }
}
