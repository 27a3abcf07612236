import EchoRelayCore
import EchoRelayQueue
import EchoRelaySharedSignals
import EchoRelayHTTP
import EchoRelayPostgres
import EchoRelaySQLite
import EchoRelayWorkers
import Foundation
import Hummingbird
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
        let checked = try CheckedSettings(configuration)
        try await ListenAddress.check(host: configuration.host, port: configuration.port)
        checked.logSecurity(configuration, logger: logger)
        let (metrics, metricsRegistry) = makeMetrics()
        let storeFigures = StoreFigures(registry: metricsRegistry)
        let processID = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UUID().uuidString.prefix(8))"
        let wakes = Wakes()
        let verificationHandOffs = verificationInbox(configuration, processID: processID)
        let backend = try await StoreBackend.open(
            checked.location, workers: .init(wakes: [wakes.verify, wakes.delivery, wakes.replay], processID: processID),
            sealer: checked.sealer, ingestWait: configuration.ingestWait, durability: configuration.durability,
            // Only an ingest-only process stores work that other processes must be woken for.
            ingestWakesOtherProcesses: !configuration.role.runsWorkers, logger: logger
        )
        // What this process verifies, it delivers: outcomes hand their deliveries to it.
        let deliveryHandOffs = configuration.role.runsWorkers
            ? DeliveryWorker.inbox(owner: processID, configuration: DeliveryWorkerConfiguration(configuration)) : nil
        let completers = Completers(
            statements: backend.store, verifications: verificationHandOffs.map { HandOffTarget(inbox: $0, wake: wakes.verify) },
            deliveries: deliveryHandOffs.map { HandOffTarget(inbox: $0, wake: wakes.delivery) }, ingestWait: configuration.ingestWait,
            // The embedded store's writes are local: a larger batch costs no round trip.
            maximumBatch: backend.sqlite == nil ? 64 : 256, metrics: metrics
        )
        let schemaReady = Gate(open: !configuration.migrateAtStart)
        let firstRun = try await prepareEmbeddedStore(backend, configuration, checked.ingestSecrets, schemaReady, logger: logger)
        let ingestSecrets = firstRun?.ingestSecrets ?? checked.ingestSecrets
        // Only a process that takes ingest reads the backlog: it is what the gate protects.
        let backlog = configuration.role.servesAPI ? configuration.backlogLimit.map(BacklogLimit.init) : nil
        let workers = makeWorkers(configuration, store: backend.store, announce: backend.announce, wakes: wakes,
                                  processID: processID, handOffs: (verificationHandOffs, deliveryHandOffs), completers: completers,
                                  ready: schemaReady, metrics: metrics, logger: logger)
        let sharedSignals = self.sharedSignals(configuration, logger: logger)
        let router = makeRouter(configuration, backend: backend, completers: completers, ingestSecrets: ingestSecrets, backlog: backlog, wakes: wakes,
                                sharedSignals: sharedSignals, metrics: metrics, metricsRegistry: metricsRegistry,
                                storeFigures: storeFigures, logger: logger)
        let poller: [any Service] = sharedSignals.map { signals in
            [SecurityEventPoller(store: backend.store, receiver: signals.receiver, ready: schemaReady, metrics: metrics,
                                 workCreated: { wakes.workCreated(.verification, announce: backend.announce) }, logger: logger)]
        } ?? []
        // Started in this order and stopped in reverse: the server stops taking requests
        // first, then the workers finish what they hold, then the completers are idle, then
        // the database client closes.
        let samplers: [any Service] = [
            MetricsSampler(store: backend.store, figures: storeFigures, interval: configuration.metricsSampleInterval, ready: schemaReady,
                           logger: logger),
        ]
        let services = backend.services
            + [completers]
            + samplers
            + apiServices(configuration, store: backend.store, backlog: backlog, ready: schemaReady, metrics: metrics, logger: logger)
            + poller
            + (configuration.role.runsWorkers ? workers : [])
        let announceListening: @Sendable (Int) async -> Void = { port in
            await announce(configuration, firstRun: firstRun, port: port, logger: logger)
            await onServerRunning(port)
        }
        return httpApplication(configuration, router: router, services: services, backend: backend, schemaReady: schemaReady,
                               onServerRunning: announceListening, logger: logger)
    }

    /// Once the server listens: where the console is, and, on the embedded store's first run,
    /// the secrets it made (printed only now, so a run that could not listen shows nothing).
    static func announce(_ configuration: ServerConfiguration, firstRun: FirstRun?, port: Int, logger: Logger) async {
        guard configuration.role.servesAPI else { return }
        let url = localURL(host: configuration.host, port: port)
        logger.info("console at \(url)/console, API description at \(url)/openapi.yaml")
        do {
            try await firstRun?.welcome(url: url, command: configuration.commandName)
        } catch {
            logger.error("the first run's admin token could not be made; restart serve to try again", metadata: ["error": "\(error)"])
        }
    }

    /// A failure to listen, in the words of the check at start; nil for any other error.
    public static func listenRefusal(_ error: any Error, host: String, port: Int) -> ConfigurationError? {
        ListenAddress.refusal(error, host: host, port: port)
    }

    /// The address a browser or client on this machine uses to reach the server.
    static func localURL(host: String, port: Int) -> String {
        switch host {
        case "0.0.0.0": "http://127.0.0.1:\(port)"
        case "::": "http://[::1]:\(port)"
        default: host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
        }
    }

    /// A process that ingests and verifies verifies what it ingests, without a claim.
    static func verificationInbox(_ configuration: ServerConfiguration, processID: String) -> VerificationInbox? {
        guard configuration.role.runsWorkers, configuration.role.servesAPI else { return nil }
        return VerificationInbox(handOff: HandOff(owner: processID, lease: configuration.echo.lease),
                                 capacity: configuration.echo.concurrency)
    }

    /// The API's routes (or only the health and metrics routes, for a workers-only process)
    /// and what they need.
    static func makeRouter(
        _ configuration: ServerConfiguration, backend: StoreBackend, completers: Completers, ingestSecrets: [WebhookSecret], backlog: BacklogLimit?,
        wakes: Wakes, sharedSignals: SharedSignals?, metrics: RelayMetrics, metricsRegistry: PrometheusCollectorRegistry,
        storeFigures: StoreFigures, logger: Logger
    ) -> Router<EchoRelayRequestContext> {
        buildRouter(servesAPI: configuration.role.servesAPI, HTTPDependencies(
            store: backend.store,
            subscriberURLPolicy: SubscriberURLPolicy(allowPrivate: configuration.delivery.allowPrivateSubscribers,
                                                     allowList: configuration.delivery.privateSubscribers),
            ingestSecrets: ingestSecrets,
            authorizer: BearerAuthorizer(adminToken: configuration.adminToken, tokens: backend.store, logger: logger),
            requestTimeout: configuration.requestTimeout, metrics: metrics, metricsRegistry: metricsRegistry,
            backlog: backlog, securityEvents: sharedSignals?.receiver, transmitter: sharedSignals?.transmitter,
            sendTestDelivery: { [sender = TestDeliverySender(configuration: DeliveryWorkerConfiguration(configuration))] in
                await sender.send(to: $0, secrets: $1)
            },
            acceptedProofs: configuration.acceptedProofs, durability: configuration.durability,
            authenticationThrottle: AuthenticationThrottle(limit: configuration.authenticationFailureLimit),
            clientAddresses: ClientAddressRule(trustedProxies: configuration.trustedProxies),
            maxSubscriptionsPerApp: configuration.maxSubscriptionsPerApp, metricsToken: configuration.metricsToken,
            storeFigures: storeFigures,
            ingest: { try await completers.ingest($0) },
            workCreated: { kind in wakes.workCreated(kind, announce: backend.announce) }
        ))
    }

    /// What runs beside the API: the backlog's sampler for the ingest gate, and the console's
    /// session sweeper (the console is served with the API, so its sessions are swept there).
    static func apiServices(
        _ configuration: ServerConfiguration, store: any EchoRelayStore, backlog: BacklogLimit?, ready: Gate,
        metrics: RelayMetrics, logger: Logger
    ) -> [any Service] {
        guard configuration.role.servesAPI else { return [] }
        let sampler: [any Service] = backlog.map { limit in
            [BacklogSampler(store: store, limit: limit, interval: configuration.backlogSampleInterval, ready: ready,
                            metrics: metrics, logger: logger)]
        } ?? []
        return sampler + [ConsoleSessionSweeper(store: store, interval: configuration.consoleSessionSweepInterval, ready: ready, logger: logger)]
    }

    /// The HTTP server with the services it starts and stops; on PostgreSQL it migrates just
    /// before taking requests (the embedded store has migrated already).
    static func httpApplication(
        _ configuration: ServerConfiguration, router: Router<EchoRelayRequestContext>, services: [any Service],
        backend: StoreBackend, schemaReady: Gate, onServerRunning: @escaping @Sendable (Int) async -> Void, logger: Logger
    ) -> App {
        var app = Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: TimeAmount(configuration.requestTimeout))),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "EchoRelay"),
            services: services,
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

    /// This application's own registry: every counter it reports, shown at GET /metrics.
    static func makeMetrics() -> (RelayMetrics, PrometheusCollectorRegistry) {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[RelayMetrics.deliveryAttemptDuration] = [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(15), .seconds(30),
        ]
        factory.valueHistogramBuckets[RelayMetrics.commitBatchSize] = RelayMetrics.commitBatchSizeBuckets
        return (RelayMetrics(factory: factory), registry)
    }

    /// Shared Signals: the transmitter's keys are fetched when the first SET names one, from
    /// `ECHORELAY_SET_JWKS_URL` or the `jwks_uri` of the transmitter's metadata. Received
    /// (pushed or polled) where the API is served.
    static func sharedSignals(_ configuration: ServerConfiguration, logger: Logger) -> SharedSignals? {
        guard configuration.role.servesAPI, let settings = configuration.securityEvents else { return nil }
        logger.info("receiving Shared Signals at POST /v1/sets", metadata: [
            "set.issuer": "\(settings.issuer)", "set.audience": "\(settings.audience)",
            "set.jwks_url": "\(settings.jwksURL ?? "from the transmitter's metadata")",
            "set.push_token": "\(settings.pushToken == nil ? "not required" : "required")",
            "set.poll_url": "\(settings.poll.url ?? "the registered poll stream's, if any")",
        ])
        if settings.allowHTTP {
            logger.warning("ECHORELAY_SET_ALLOW_HTTP is on: the transmitter's keys, metadata and poll endpoint may be plain http; for local testing only")
        }
        return SharedSignals(settings: settings)
    }

    /// The embedded store: one process owns the file, so it migrates before anything else, and
    /// the first run keeps its generated secrets in the store. Answers the ingest secrets.
    static func prepareEmbeddedStore(
        _ backend: StoreBackend, _ configuration: ServerConfiguration, _ ingestSecrets: [WebhookSecret], _ schemaReady: Gate,
        logger: Logger
    ) async throws -> FirstRun? {
        guard let sqlite = backend.sqlite else {
            if configuration.adminToken == nil {
                logger.warning("ECHORELAY_ADMIN_TOKEN is not set: only tokens made with `echorelay tokens create` are accepted")
            }
            return nil
        }
        do {
            if configuration.migrateAtStart {
                let applied = try await backend.migrate()
                logger.info("embedded store is current", metadata: ["path": "\(sqlite.path)", "migrations.applied": "\(applied.count)"])
                schemaReady.open()
            }
            return try await FirstRun.prepare(
                store: sqlite, ingestSecrets: ingestSecrets, adminToken: configuration.adminToken, logger: logger
            )
        } catch {
            try? await sqlite.close()
            throw error
        }
    }

    /// The verify, delivery and replay workers, in the order they start.
    static func makeWorkers(
        _ configuration: ServerConfiguration, store: any EchoRelayStore, announce: @escaping @Sendable () -> Void, wakes: Wakes,
        processID: String, handOffs: (verifications: VerificationInbox?, deliveries: DeliveryInbox?), completers: Completers,
        ready: Gate, metrics: RelayMetrics, logger: Logger
    ) -> [any Service] {
        let verifying = VerifyWorkerConfiguration(configuration)
        let delivering = DeliveryWorkerConfiguration(configuration)
        let verifyWorker = VerifyWorker(
            store: store,
            policy: configuration.echo.isConfigured
                ? EchoPolicy(allowedHosts: configuration.echo.allowedHosts, allowHTTP: configuration.echo.allowHTTP,
                             consumerKey: configuration.echo.consumerKey)
                : nil,
            authorizationServer: configuration.oauth2?.authorizationServer,
            echoTimeout: configuration.echo.timeout, wake: wakes.verify, configuration: verifying,
            // Other processes are woken by the outcome's own statement (`wakeOnOutcomes`).
            owner: processID, ready: ready, completers: completers,
            verificationHandOffs: handOffs.verifications, metrics: metrics, logger: logger
        )
        let deliveryWorker = DeliveryWorker(
            store: store, wake: wakes.delivery, configuration: delivering, owner: processID, handOffs: handOffs.deliveries,
            completers: completers, ready: ready, metrics: metrics, logger: logger
        )
        let replayWorker = ReplayWorker(
            store: store, rate: configuration.delivery.replayRate, wake: wakes.replay, pollInterval: configuration.echo.pollInterval,
            ready: ready,
            deliveriesCreated: {
                wakes.delivery.wake()
                announce()
            },
            logger: logger
        )
        if configuration.delivery.allowPrivateSubscribers {
            logger.warning("ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS is on: subscribers may be private addresses over http; for local testing only")
        }
        let pruner: [any Service] = configuration.retention.keepsEverything ? [] : [RetentionPruner(
            pruning: Pruning(store: store, policy: configuration.retention), interval: configuration.pruneInterval, ready: ready,
            metrics: metrics, logger: logger
        )]
        return [verifyWorker, deliveryWorker, replayWorker] + pruner
    }
}

/// The wake-ups of this process's workers.
struct Wakes {
    let verify = WakeSignal()
    let delivery = WakeSignal()
    let replay = WakeSignal()

    /// Work an API call created: workers in this process at once. Workers elsewhere: an
    /// ingest-only process's ingest statement notifies them itself; other work is announced
    /// after its commit.
    func workCreated(_ kind: CreatedWork, announce: () -> Void) {
        switch kind {
        case .verification:
            verify.wake()
        case .verificationHandedOff:
            break  // the ingest completer woke it when it handed the verification off
        case .delivery:
            delivery.wake()
            announce()
        case .replay:
            replay.wake()
            announce()
        }
    }
}

extension VerifyWorkerConfiguration {
    init(_ configuration: ServerConfiguration) {
        self.init()
        lease = configuration.echo.lease
        retrySchedule = configuration.echo.retrySchedule
        concurrency = configuration.echo.concurrency
        pollInterval = configuration.echo.pollInterval
        shutdownGrace = configuration.shutdownGrace
    }
}

extension DeliveryWorkerConfiguration {
    init(_ configuration: ServerConfiguration) {
        self.init()
        lease = configuration.echo.lease
        timeout = configuration.delivery.timeout
        connectTimeout = configuration.delivery.effectiveConnectTimeout
        retry = DeliveryRetryPolicy(schedule: configuration.delivery.retrySchedule)
        disableAfter = configuration.delivery.disableAfter
        pollInterval = configuration.echo.pollInterval
        shutdownGrace = configuration.shutdownGrace
        concurrency = configuration.delivery.concurrency
        perSubscriptionConcurrency = configuration.delivery.perSubscriptionConcurrency
        allowPrivateSubscribers = configuration.delivery.allowPrivateSubscribers
        privateSubscribers = configuration.delivery.privateSubscribers
        subscriberCAFile = configuration.delivery.subscriberCAFile
        nameLookups = configuration.delivery.nameLookups
        siblingLinger = configuration.delivery.siblingLinger
    }
}

/// The settings `serve` checks before it opens anything: where the data lives, the ingest
/// secrets and the sealer of subscription secrets, each refused with the setting's name.
struct CheckedSettings {
    let location: DatabaseLocation
    let ingestSecrets: [WebhookSecret]
    let sealer: SecretSealer?

    init(_ configuration: ServerConfiguration) throws {
        location = try DatabaseLocation.parse(configuration.databaseURL)
        ingestSecrets = try configuration.ingestSecrets.enumerated().map { index, secret in
            let parsed: WebhookSecret
            do throws(WebhookSecretError) {
                parsed = try WebhookSecret(secret.revealed)
            } catch {
                throw ConfigurationError(setting: "ECHORELAY_INGEST_SECRETS", reason: error.description)
            }
            guard SecretStrength.isStrong(keyBytes: parsed.keyByteCount) else {
                throw ConfigurationError(
                    setting: "ECHORELAY_INGEST_SECRETS",
                    reason: "secret \(index + 1) has a key of \(parsed.keyByteCount) bytes, and at least 16 (128 bits) are needed; generate one with: echorelay secret"
                )
            }
            return parsed
        }
        if let adminToken = configuration.adminToken, !SecretStrength.isStrong(adminToken.revealed) {
            throw ConfigurationError(
                setting: "ECHORELAY_ADMIN_TOKEN",
                reason: "is weaker than 128 bits (too short, or too few kinds of character); make one with `echorelay secret`, or issue an admin token with `echorelay tokens create --role admin` and unset this variable"
            )
        }
        if let metricsToken = configuration.metricsToken, !SecretStrength.isStrong(metricsToken.revealed) {
            throw ConfigurationError(
                setting: "ECHORELAY_METRICS_TOKEN",
                reason: "is weaker than 128 bits (too short, or too few kinds of character); make one with `echorelay secret`"
            )
        }
        if ingestSecrets.isEmpty, case .postgres = location {
            throw ConfigurationError(
                setting: "ECHORELAY_INGEST_SECRETS",
                reason: "at least one whsec_ secret is required to accept events (generate one with: echorelay secret)"
            )
        }
        if case .sqlite = location, configuration.durability == .standby {
            throw ConfigurationError(
                setting: "ECHORELAY_DURABILITY",
                reason: "standby waits for a PostgreSQL standby to hold each commit, and the embedded store has none; use local, or run on PostgreSQL with a streaming standby (ECHORELAY_DATABASE_URL=postgres://…)"
            )
        }
        if case .sqlite = location, configuration.role != .all {
            throw ConfigurationError(
                setting: "ECHORELAY_ROLE",
                reason: "\(configuration.role.rawValue) splits the work over several processes, which needs PostgreSQL (ECHORELAY_DATABASE_URL=postgres://…); the embedded store serves one process that does everything"
            )
        }
        try configuration.validateProviders()
        try configuration.delivery.validate(lease: configuration.echo.lease)
        try configuration.validateBacklog()
        try configuration.validatePruneInterval()
        try configuration.validateSecurityEvents()
        sealer = try configuration.secretKey.map { key in
            do throws(SecretSealerError) {
                return try SecretSealer(keys: key.revealed)
            } catch {
                // The description names the setting itself.
                throw ConfigurationError(setting: "ECHORELAY_SECRET_KEY", reason: String(error.description.trimmingPrefix("ECHORELAY_SECRET_KEY: ")))
            }
        }
    }

    /// Says at start how secrets are kept, and warns of settings meant only for testing.
    func logSecurity(_ configuration: ServerConfiguration, logger: Logger) {
        if configuration.durability == .standby {
            logger.info("ECHORELAY_DURABILITY=standby: a 202, and any change acknowledged through the API, waits until a standby of the primary has flushed it (up to \(DurationText.format(configuration.ingestWait)), else 503)")
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
        if let oauth2 = configuration.oauth2 {
            let server = oauth2.authorizationServer
            logger.info("re-verifying OAuth 2 events by token introspection", metadata: [
                "oauth2.introspection_url": "\(server.introspectionURL)", "oauth2.userinfo_url": "\(server.userInfoURL ?? "none")",
                "oauth2.client_id": "\(server.clientID)", "oauth2.token_client_id": "\(server.policy.tokenClientID)",
                "oauth2.issuer": "\(server.policy.issuer ?? "any")",
            ])
            if oauth2.allowHTTP {
                logger.warning("ECHORELAY_OAUTH2_ALLOW_HTTP is on: the OAuth 2 endpoints may use plain http, which sends the client secret and users' tokens in the clear; for local testing only")
            }
        }
    }
}
