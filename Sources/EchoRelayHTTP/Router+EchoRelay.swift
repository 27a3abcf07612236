import EchoRelayCore
import Foundation
import Hummingbird

/// Everything the HTTP layer needs from the rest of the process.
public struct HTTPDependencies: Sendable {
    public var store: any EchoRelayStore
    public var subscriberURLPolicy: SubscriberURLPolicy
    public var ingestSecrets: [WebhookSecret]
    public var authorizer: BearerAuthorizer
    public var now: @Sendable () -> Date
    /// Called after a request commits new work, to wake the workers that take that kind.
    public var workCreated: @Sendable (WorkKind) -> Void

    public init(
        store: any EchoRelayStore, subscriberURLPolicy: SubscriberURLPolicy, ingestSecrets: [WebhookSecret],
        authorizer: BearerAuthorizer,
        now: @escaping @Sendable () -> Date = { Date() }, workCreated: @escaping @Sendable (WorkKind) -> Void = { _ in }
    ) {
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
    HealthController(store: dependencies.store).addRoutes(to: router)
    guard servesAPI else { return router }
    OpenAPIController().addRoutes(to: router)
    let workCreated = dependencies.workCreated
    IngestController(
        store: dependencies.store, ingestSecrets: dependencies.ingestSecrets, now: dependencies.now,
        workCreated: { workCreated(.verification) }
    ).addRoutes(to: router)
    EventsController(store: dependencies.store, authorizer: dependencies.authorizer).addRoutes(to: router)
    UsersController(store: dependencies.store, authorizer: dependencies.authorizer).addRoutes(to: router)
    SupportController(store: dependencies.store, authorizer: dependencies.authorizer, workCreated: dependencies.workCreated)
        .addRoutes(to: router)
    ReplaysController(store: dependencies.store, authorizer: dependencies.authorizer, replayStarted: { workCreated(.replay) })
        .addRoutes(to: router)
    DeadLettersController(store: dependencies.store, authorizer: dependencies.authorizer, deliveriesCreated: { workCreated(.delivery) })
        .addRoutes(to: router)
    AuditController(store: dependencies.store, authorizer: dependencies.authorizer).addRoutes(to: router)
    SubscriptionsController(
        store: dependencies.store, authorizer: dependencies.authorizer, urlPolicy: dependencies.subscriberURLPolicy
    ).addRoutes(to: router)
    return router
}
