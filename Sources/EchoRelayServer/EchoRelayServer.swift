import EchoRelayCore
import EchoRelaySharedSignals
import EchoRelayHTTP
import EchoRelayPostgres
import EchoRelaySQLite
import EchoRelayWorkers
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import Prometheus
import ServiceLifecycle

/// Builds the `serve` process: the store (PostgreSQL or the embedded file), the workers and the HTTP application,
/// as one Hummingbird application whose services start and stop together.
public enum EchoRelayServer {
    public typealias App = Application<RouterResponder<EchoRelayRequestContext>>

    public static func makeApplication(
        _ configuration: ServerConfiguration, logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws -> App {
        let location = try DatabaseLocation.parse(configuration.databaseURL)
        var ingestSecrets = try configuration.ingestSecrets.map { secret in
            do throws(WebhookSecretError) {
                return try WebhookSecret(secret.revealed)
            } catch {
                throw ConfigurationError(setting: "ECHORELAY_INGEST_SECRETS", reason: error.description)
            }
        }
        if ingestSecrets.isEmpty, case .postgres = location {
            throw ConfigurationError(
                setting: "ECHORELAY_INGEST_SECRETS",
                reason: "at least one whsec_ secret is required to accept events (generate one with: echorelay secret)"
            )
        }
        if case .sqlite = location, configuration.role != .all {
            throw ConfigurationError(
                setting: "ECHORELAY_ROLE",
                reason: "\(configuration.role.rawValue) splits the work over several processes, which needs PostgreSQL (ECHORELAY_DATABASE_URL=postgres://…); the embedded store serves one process that does everything"
            )
        }
        try configuration.echo.validate()
        try configuration.delivery.validate(lease: configuration.echo.lease)
        try configuration.validateBacklog()
        try configuration.validateSecurityEvents()
        let sealer = try configuration.secretKey.map { key in
            do throws(SecretSealerError) {
                return try SecretSealer(keys: key.revealed)
            } catch {
                // The description names the setting itself.
                throw ConfigurationError(setting: "ECHORELAY_SECRET_KEY", reason: String(error.description.trimmingPrefix("ECHORELAY_SECRET_KEY: ")))
            }
        }
        if let sealer {
            logger.info("subscription secrets are sealed at rest", metadata: [
                "secret_key.sealing": "\(sealer.sealingKeyID)", "secret_key.ids": "\(sealer.keyIDs.joined(separator: ","))",
            ])
        } else {
            let database = if case .postgres = location { "PostgreSQL database" } else { "embedded SQLite file" }
            logger.warning("ECHORELAY_SECRET_KEY is not set: subscription signing secrets are stored in plaintext in the \(database) (make a key with: echorelay secret-key)")
        }
        if configuration.echo.allowHTTP {
            logger.warning("ECHORELAY_ECHO_ALLOW_HTTP is on: OAuth Echo may use plain http; for local testing only")
        }
        // Shared Signals: the transmitter's keys are fetched when the first SET names one.
        let securityEvents = configuration.role.servesAPI ? configuration.securityEvents.map { settings in
            SecurityEventReceiver(settings: settings, keys: TransmitterKeys(refetchInterval: settings.keysRefetchInterval,
                                                             fetch: JWKSFetch.from(settings.jwksURL)))
        } : nil
        if let settings = securityEvents?.settings {
            logger.info("receiving Shared Signals at POST /v1/sets", metadata: [
                "set.issuer": "\(settings.issuer)", "set.audience": "\(settings.audience)", "set.jwks_url": "\(settings.jwksURL)",
                "set.push_token": "\(settings.pushToken == nil ? "not required" : "required")",
            ])
            if settings.allowHTTP {
                logger.warning("ECHORELAY_SET_ALLOW_HTTP is on: the transmitter's keys may come over plain http; for local testing only")
            }
        }

        // This application's own registry: every counter it reports, shown at GET /metrics.
        let metricsRegistry = PrometheusCollectorRegistry()
        var metricsFactory = PrometheusMetricsFactory(registry: metricsRegistry)
        metricsFactory.durationHistogramBuckets[RelayMetrics.deliveryAttemptDuration] = [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(15), .seconds(30),
        ]
        metricsFactory.valueHistogramBuckets[RelayMetrics.commitBatchSize] = RelayMetrics.commitBatchSizeBuckets
        let metrics = RelayMetrics(factory: metricsFactory)

        let processID = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UUID().uuidString.prefix(8))"
        let wake = WakeSignal()
        let deliveryWake = WakeSignal()
        let replayWake = WakeSignal()
        // A process that ingests and verifies verifies what it ingests, without a claim.
        let verificationHandOffs = configuration.role.runsWorkers && configuration.role.servesAPI
            ? VerificationInbox(handOff: HandOff(owner: processID, lease: configuration.echo.lease),
                                capacity: configuration.echo.concurrency)
            : nil
        let backend = try await StoreBackend.open(
            location, localWakes: [wake, deliveryWake, replayWake], processID: processID, sealer: sealer, metrics: metrics, ingestWait: configuration.ingestWait,
            // Only an ingest-only process stores work that other processes must be woken for.
            ingestWakesOtherProcesses: !configuration.role.runsWorkers, verificationHandOffs: verificationHandOffs, logger: logger
        )
        let store = backend.store
        let schemaReady = Gate(open: !configuration.migrateAtStart)
        if let sqlite = backend.sqlite {
            do {
                // One process owns the file, so it migrates before anything else, and the
                // first run can keep its generated secrets in the store.
                if configuration.migrateAtStart {
                    let applied = try await backend.migrate()
                    logger.info("embedded store is current", metadata: ["path": "\(sqlite.path)", "migrations.applied": "\(applied.count)"])
                    schemaReady.open()
                }
                let firstRun = try await FirstRun.prepare(
                    store: sqlite, ingestSecrets: ingestSecrets, adminToken: configuration.adminToken, logger: logger
                )
                ingestSecrets = firstRun.ingestSecrets
                firstRun.printWelcome(host: configuration.host, port: configuration.port)
            } catch {
                try? await sqlite.close()
                throw error
            }
        } else if configuration.adminToken == nil {
            logger.warning("ECHORELAY_ADMIN_TOKEN is not set: only tokens made with `echorelay tokens create` are accepted")
        }
        let announce = backend.announce
        var workerConfiguration = VerifyWorkerConfiguration()
        workerConfiguration.lease = configuration.echo.lease
        workerConfiguration.retrySchedule = configuration.echo.retrySchedule
        workerConfiguration.concurrency = configuration.echo.concurrency
        workerConfiguration.pollInterval = configuration.echo.pollInterval
        workerConfiguration.shutdownGrace = configuration.shutdownGrace
        var deliveryConfiguration = DeliveryWorkerConfiguration()
        deliveryConfiguration.lease = configuration.echo.lease
        deliveryConfiguration.timeout = configuration.delivery.timeout
        deliveryConfiguration.retry = DeliveryRetryPolicy(schedule: configuration.delivery.retrySchedule)
        deliveryConfiguration.disableAfter = configuration.delivery.disableAfter
        deliveryConfiguration.pollInterval = configuration.echo.pollInterval
        deliveryConfiguration.shutdownGrace = configuration.shutdownGrace
        deliveryConfiguration.concurrency = configuration.delivery.concurrency
        deliveryConfiguration.perSubscriptionConcurrency = configuration.delivery.perSubscriptionConcurrency
        deliveryConfiguration.allowPrivateSubscribers = configuration.delivery.allowPrivateSubscribers
        deliveryConfiguration.privateSubscribers = configuration.delivery.privateSubscribers
        deliveryConfiguration.subscriberCAFile = configuration.delivery.subscriberCAFile
        deliveryConfiguration.resolve = configuration.delivery.resolveSubscriber
        deliveryConfiguration.siblingLinger = configuration.delivery.siblingLinger
        // Both workers run in the same processes: what this process verifies, it delivers.
        let handOffs = DeliveryWorker.inbox(owner: processID, configuration: deliveryConfiguration)
        let verifyWorker = VerifyWorker(
            store: store,
            policy: EchoPolicy(allowedHosts: configuration.echo.allowedHosts, allowHTTP: configuration.echo.allowHTTP,
                               consumerKey: configuration.echo.consumerKey),
            echoTimeout: configuration.echo.timeout, wake: wake, configuration: workerConfiguration,
            owner: processID, ready: schemaReady,
            // Other processes are woken by the outcome's own statement (`wakeOnOutcomes`).
            deliveriesCreated: { claim in deliveryWake.wake(claim: claim) }, handOffs: handOffs, verificationHandOffs: verificationHandOffs,
            metrics: metrics, logger: logger
        )
        let deliveryWorker = DeliveryWorker(
            store: store, wake: deliveryWake, configuration: deliveryConfiguration, owner: processID, handOffs: handOffs,
            ready: schemaReady,
            metrics: metrics, logger: logger
        )
        let replayWorker = ReplayWorker(
            store: store, rate: configuration.delivery.replayRate, wake: replayWake, pollInterval: configuration.echo.pollInterval,
            ready: schemaReady,
            deliveriesCreated: {
                deliveryWake.wake()
                announce()
            },
            logger: logger
        )
        if configuration.delivery.allowPrivateSubscribers {
            logger.warning("ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS is on: subscribers may be private addresses over http; for local testing only")
        }
        // Only a process that takes ingest reads the backlog: it is what the gate protects.
        let backlog = configuration.role.servesAPI ? configuration.backlogLimit.map(BacklogLimit.init) : nil
        let backlogSampler = backlog.map { limit in
            BacklogSampler(store: store, limit: limit, interval: configuration.backlogSampleInterval, ready: schemaReady,
                           metrics: metrics, logger: logger)
        }
        // The console is served with the API, so its expired sessions are swept there.
        let sessionSweeper: [any Service] = configuration.role.servesAPI
            ? [ConsoleSessionSweeper(store: store, interval: configuration.consoleSessionSweepInterval, ready: schemaReady, logger: logger)]
            : []
        let router = buildRouter(servesAPI: configuration.role.servesAPI, HTTPDependencies(
            store: store,
            subscriberURLPolicy: SubscriberURLPolicy(allowPrivate: configuration.delivery.allowPrivateSubscribers,
                                                     allowList: configuration.delivery.privateSubscribers),
            ingestSecrets: ingestSecrets, authorizer: BearerAuthorizer(adminToken: configuration.adminToken, tokens: store, logger: logger),
            requestTimeout: configuration.requestTimeout, metrics: metrics, metricsRegistry: metricsRegistry,
            backlog: backlog, securityEvents: securityEvents,
            workCreated: { kind in
                // Workers in this process at once. Workers elsewhere: an ingest-only process's
                // ingest statement notifies them itself; other work is announced after its commit.
                switch kind {
                case .verification:
                    wake.wake()
                case .verificationHandedOff:
                    wake.wake(claim: false)
                case .delivery:
                    deliveryWake.wake()
                    announce()
                case .replay:
                    replayWake.wake()
                    announce()
                }
            }
        ))
        var app = Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: TimeAmount(configuration.requestTimeout))),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "EchoRelay"),
            // Started in this order and stopped in reverse: the server stops taking requests
            // first, then the worker finishes what it holds, then the database client closes.
            services: backend.services + (backlogSampler.map { [$0] } ?? []) + sessionSweeper
                + (configuration.role.runsWorkers ? [verifyWorker, deliveryWorker, replayWorker] : []),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        if configuration.migrateAtStart, backend.sqlite == nil {
            app.beforeServerStarts {
                let applied = try await backend.migrate()
                logger.info("database schema is current", metadata: ["migrations.applied": "\(applied.count)"])
                schemaReady.open()
            }
        }
        return app
    }
}
