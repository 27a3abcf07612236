import EchoRelayCore
import EchoRelayQueue
import EchoRelaySharedSignals
import Foundation
import Hummingbird
import Prometheus

/// Everything the HTTP layer needs from the rest of the process.
public struct HTTPDependencies: Sendable {
    public var store: any EchoRelayStore
    /// How `POST /v1/events` stores an event: the queue's ingest completer in `serve`; nil:
    /// the store's own `ingest`, one transaction an event.
    public var ingest: (@Sendable (IncomingEvent) async throws -> IngestReceipt)?
    public var subscriberURLPolicy: SubscriberURLPolicy
    public var ingestSecrets: [WebhookSecret]
    public var authorizer: BearerAuthorizer
    public var now: @Sendable () -> Date
    /// Called after a request commits new work, to wake the workers that take that kind.
    public var workCreated: @Sendable (CreatedWork) -> Void
    /// How long a client has to send a request's body.
    public var requestTimeout: Duration
    public var metrics: RelayMetrics
    /// What `GET /metrics` shows: the registry behind `metrics`.
    public var metricsRegistry: PrometheusCollectorRegistry
    /// Ingest's gate by backlog (`ECHORELAY_BACKLOG_LIMIT`); nil: no limit.
    public var backlog: BacklogLimit?
    /// `POST /v1/sets`, for a Shared Signals transmitter; nil: not configured (404).
    public var securityEvents: SecurityEventReceiver?
    /// The transmitter's metadata and stream endpoints (`/v1/sets/stream`); nil: not configured.
    public var transmitter: TransmitterClient?
    /// `POST /v1/subscriptions/{id}/test`; nil: not served (404).
    public var sendTestDelivery: SendTestDelivery?
    /// The proofs ingest and re-verification accept: those of the configured providers.
    public var acceptedProofs: AcceptedProofs
    /// With `.standby`, every change asked for through the API is answered only once a standby
    /// holds it (`DurableAnswerMiddleware`); ingest confirms inside its own commits.
    public var durability: Durability
    /// Failed authentications per client address (`ECHORELAY_AUTH_FAILURE_LIMIT`), and how the
    /// address is told behind a proxy (`ECHORELAY_TRUSTED_PROXIES`).
    public var authenticationThrottle: AuthenticationThrottle
    public var clientAddresses: ClientAddressRule
    /// `ECHORELAY_MAX_SUBSCRIPTIONS_PER_APP`.
    public var maxSubscriptionsPerApp: Int
    public static let defaultMaxSubscriptionsPerApp = 50
    /// `ECHORELAY_METRICS_TOKEN`: what a scrape of `/metrics` must present; nil: none.
    public var metricsToken: Secret?
    /// What the samplers last read of the store, for `/metrics` and `/readyz`.
    public var storeFigures: StoreFigures

    public init(
        store: any EchoRelayStore, subscriberURLPolicy: SubscriberURLPolicy, ingestSecrets: [WebhookSecret],
        authorizer: BearerAuthorizer, requestTimeout: Duration = .seconds(30),
        metrics: RelayMetrics = RelayMetrics(), metricsRegistry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
        backlog: BacklogLimit? = nil, securityEvents: SecurityEventReceiver? = nil, transmitter: TransmitterClient? = nil,
        sendTestDelivery: SendTestDelivery? = nil,
        acceptedProofs: AcceptedProofs = .all, durability: Durability = .local,
        authenticationThrottle: AuthenticationThrottle = AuthenticationThrottle(), clientAddresses: ClientAddressRule = ClientAddressRule(),
        maxSubscriptionsPerApp: Int = defaultMaxSubscriptionsPerApp, metricsToken: Secret? = nil, storeFigures: StoreFigures? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        ingest: (@Sendable (IncomingEvent) async throws -> IngestReceipt)? = nil,
        workCreated: @escaping @Sendable (CreatedWork) -> Void = { _ in }
    ) {
        self.ingest = ingest
        self.securityEvents = securityEvents
        self.transmitter = transmitter
        self.sendTestDelivery = sendTestDelivery
        self.acceptedProofs = acceptedProofs
        self.durability = durability
        self.authenticationThrottle = authenticationThrottle
        self.clientAddresses = clientAddresses
        self.maxSubscriptionsPerApp = maxSubscriptionsPerApp
        self.metricsToken = metricsToken
        self.storeFigures = storeFigures ?? StoreFigures(registry: metricsRegistry)
        self.requestTimeout = requestTimeout
        self.backlog = backlog
        self.metrics = metrics
        self.metricsRegistry = metricsRegistry
        self.store = store
        self.subscriberURLPolicy = subscriberURLPolicy
        self.ingestSecrets = ingestSecrets
        self.authorizer = authorizer
        self.now = now
        self.workCreated = workCreated
    }
}

/// The whole HTTP API, route by route. A workers-only process serves only health checks.
public func buildRouter(servesAPI: Bool = true, _ dependencies: HTTPDependencies) -> Router<EchoRelayRequestContext> {
    let router = Router(context: EchoRelayRequestContext.self)
    router.add(middleware: ProblemMiddleware())
    let paths = DocumentedPaths(document: OpenAPIController<EchoRelayRequestContext>.document)
    if servesAPI {
        router.add(middleware: MethodNotAllowedMiddleware(paths: paths))
    }
    router.add(middleware: RequestBodyMiddleware(timeout: dependencies.requestTimeout))
    router.add(middleware: AuthenticationThrottleMiddleware(throttle: dependencies.authenticationThrottle, paths: paths,
                                                            addresses: dependencies.clientAddresses, metrics: dependencies.metrics))
    if dependencies.durability == .standby { router.add(middleware: DurableAnswerMiddleware(store: dependencies.store)) }
    HealthController(store: dependencies.store).addRoutes(to: router)
    MetricsController(registry: dependencies.metricsRegistry, token: dependencies.metricsToken).addRoutes(to: router)
    guard servesAPI else { return router }
    OpenAPIController().addRoutes(to: router)
    let workCreated = dependencies.workCreated
    IngestController(
        storeEvent: dependencies.ingest ?? { [store = dependencies.store] in try await store.ingest($0) }, ingestSecrets: dependencies.ingestSecrets, now: dependencies.now, metrics: dependencies.metrics,
        backlog: dependencies.backlog, acceptedProofs: dependencies.acceptedProofs,
        workCreated: { handedOff in workCreated(handedOff ? .verificationHandedOff : .verification) }
    ).addRoutes(to: router)
    SecurityEventsController(
        store: dependencies.store, receiver: dependencies.securityEvents, authorizer: dependencies.authorizer,
        backlog: dependencies.backlog, metrics: dependencies.metrics, workCreated: { workCreated(.verification) }
    ).addRoutes(to: router)
    SecurityEventStreamController(
        store: dependencies.store, transmitter: dependencies.transmitter, pushToken: dependencies.securityEvents?.settings.pushToken,
        authorizer: dependencies.authorizer, metrics: dependencies.metrics
    ).addRoutes(to: router)
    SupportController(store: dependencies.store, authorizer: dependencies.authorizer, workCreated: dependencies.workCreated,
                      metrics: dependencies.metrics, acceptedProofs: dependencies.acceptedProofs).addRoutes(to: router)
    ReplaysController(store: dependencies.store, authorizer: dependencies.authorizer, replayStarted: { workCreated(.replay) },
                      metrics: dependencies.metrics).addRoutes(to: router)
    DeadLettersController(store: dependencies.store, authorizer: dependencies.authorizer, deliveriesCreated: { workCreated(.delivery) })
        .addRoutes(to: router)
    AuditController(store: dependencies.store, authorizer: dependencies.authorizer).addRoutes(to: router)
    SubscriptionsController(
        store: dependencies.store, authorizer: dependencies.authorizer, urlPolicy: dependencies.subscriberURLPolicy,
        maxPerApp: dependencies.maxSubscriptionsPerApp
    ).addRoutes(to: router)
    SubscriptionDeliveriesController(store: dependencies.store, authorizer: dependencies.authorizer,
                                     sendTestDelivery: dependencies.sendTestDelivery).addRoutes(to: router)
    DeliveryLookupController(store: dependencies.store, authorizer: dependencies.authorizer).addRoutes(to: router)
    TokensController(store: dependencies.store, authorizer: dependencies.authorizer).addRoutes(to: router)
    ConsoleController(
        store: dependencies.store,
        sessions: ConsoleSessions(store: dependencies.store, authorizer: dependencies.authorizer, now: dependencies.now),
        renderer: ConsoleRenderer(), workCreated: dependencies.workCreated, sendTestDelivery: dependencies.sendTestDelivery,
        metrics: dependencies.metrics,
        sharedSignalsConfigured: dependencies.securityEvents != nil, now: dependencies.now
    ).addRoutes(to: router)
    return router
}
