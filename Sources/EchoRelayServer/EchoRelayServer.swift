import EchoRelayCore
import EchoRelayHTTP
import EchoRelayPostgres
import EchoRelayWorkers
import Foundation
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
        try configuration.echo.validate()
        try configuration.delivery.validate(lease: configuration.echo.lease)
        if configuration.echo.allowHTTP {
            logger.warning("ECHORELAY_ECHO_ALLOW_HTTP is on: OAuth Echo may use plain http; for local testing only")
        }
        if configuration.adminToken == nil {
            logger.warning("ECHORELAY_ADMIN_TOKEN is not set: the admin API refuses every request")
        }

        let processID = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UUID().uuidString.prefix(8))"
        let client = PostgresClient(configuration: databaseConfiguration, backgroundLogger: logger)
        let store = PostgresEventStore(client: client, logger: logger)
        let wake = WakeSignal()
        let deliveryWake = WakeSignal()
        let schemaReady = Gate(open: !configuration.migrateAtStart)
        let notifications = PostgresWorkNotifications(
            client: client, localWakes: [wake, deliveryWake], processID: processID, logger: logger
        )
        var workerConfiguration = VerifyWorkerConfiguration()
        workerConfiguration.lease = configuration.echo.lease
        workerConfiguration.retrySchedule = configuration.echo.retrySchedule
        workerConfiguration.concurrency = configuration.echo.concurrency
        workerConfiguration.pollInterval = configuration.echo.pollInterval
        let verifyWorker = VerifyWorker(
            store: store,
            policy: EchoPolicy(allowedHosts: configuration.echo.allowedHosts, allowHTTP: configuration.echo.allowHTTP,
                               consumerKey: configuration.echo.consumerKey),
            echoTimeout: configuration.echo.timeout, wake: wake, configuration: workerConfiguration,
            owner: processID, ready: schemaReady,
            deliveriesCreated: {
                deliveryWake.wake()
                notifications.announce()
            },
            logger: logger
        )
        var deliveryConfiguration = DeliveryWorkerConfiguration()
        deliveryConfiguration.lease = configuration.echo.lease
        deliveryConfiguration.timeout = configuration.delivery.timeout
        deliveryConfiguration.retry = DeliveryRetryPolicy(schedule: configuration.delivery.retrySchedule)
        deliveryConfiguration.disableAfter = configuration.delivery.disableAfter
        deliveryConfiguration.pollInterval = configuration.echo.pollInterval
        deliveryConfiguration.concurrency = configuration.delivery.concurrency
        deliveryConfiguration.perSubscriptionConcurrency = configuration.delivery.perSubscriptionConcurrency
        deliveryConfiguration.allowPrivateSubscribers = configuration.delivery.allowPrivateSubscribers
        let deliveryWorker = DeliveryWorker(
            store: store, wake: deliveryWake, configuration: deliveryConfiguration, owner: processID, ready: schemaReady,
            logger: logger
        )
        if configuration.delivery.allowPrivateSubscribers {
            logger.warning("ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS is on: subscribers may be private addresses over http; for local testing only")
        }
        let router = buildRouter(servesAPI: configuration.role.servesAPI, HTTPDependencies(
            store: store,
            subscriberURLPolicy: SubscriberURLPolicy(allowPrivate: configuration.delivery.allowPrivateSubscribers),
            ingestSecrets: secrets, authorizer: BearerAuthorizer(adminToken: configuration.adminToken, tokens: store, logger: logger),
            workCreated: {
                wake.wake()  // workers in this process, at once
                notifications.announce()  // workers elsewhere, after the commit, debounced
            }
        ))
        var app = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "EchoRelay"),
            // Started in this order and stopped in reverse: the server stops taking requests
            // first, then the worker finishes what it holds, then the database client closes.
            services: configuration.role.runsWorkers
                ? [client, notifications, verifyWorker, deliveryWorker] : [client, notifications],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        if configuration.migrateAtStart {
            app.beforeServerStarts {
                let applied = try await Migrator(client: client, logger: logger).migrate()
                logger.info("database schema is current", metadata: ["migrations.applied": "\(applied)"])
                schemaReady.open()
            }
        }
        return app
    }
}
