import EchoRelayCore
import Foundation
import Hummingbird

/// Everything the HTTP layer needs from the rest of the process.
public struct HTTPDependencies: Sendable {
    public var store: any EventStore
    public var ingestSecrets: [WebhookSecret]
    public var authorizer: BearerAuthorizer
    public var now: @Sendable () -> Date

    public init(
        store: any EventStore, ingestSecrets: [WebhookSecret], authorizer: BearerAuthorizer,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.ingestSecrets = ingestSecrets
        self.authorizer = authorizer
        self.now = now
    }
}

/// The whole HTTP API, route by route.
public func buildRouter(_ dependencies: HTTPDependencies) -> Router<EchoRelayRequestContext> {
    let router = Router(context: EchoRelayRequestContext.self)
    router.add(middleware: ProblemMiddleware())
    HealthController(store: dependencies.store).addRoutes(to: router)
    IngestController(store: dependencies.store, ingestSecrets: dependencies.ingestSecrets, now: dependencies.now)
        .addRoutes(to: router)
    EventsController(store: dependencies.store, authorizer: dependencies.authorizer).addRoutes(to: router)
    return router
}
