import EchoRelayAPI
import EchoRelayCore
import Hummingbird
import Logging

/// `/v1/replays`: bulk replays by filter, with a dry-run count, progress and cancel; and
/// `/v1/subscriptions/{id}/recover`, the replay an app backend starts for its own subscription
/// (whose progress and cancel it may then use too).
struct ReplaysController<Context: RequestContext>: Sendable {
    let store: any EchoRelayStore
    let authorizer: BearerAuthorizer
    /// Called after a bulk replay is recorded, to wake the replay workers.
    let replayStarted: @Sendable () -> Void
    let metrics: RelayMetrics

    func addRoutes(to router: Router<Context>) {
        router.post("/v1/replays", use: start)
        router.get("/v1/replays/{id}", use: show)
        router.post("/v1/replays/{id}/cancel", use: cancel)
        router.post("/v1/subscriptions/{id}/recover", use: recover)
    }

    @Sendable func recover(_ request: Request, context: Context) async throws -> Response {
        let actor = try await authorizer.require(request, roles: [.admin, .support, .app])
        let subscription = try await store.subscription(id: try context.parameters.decoded("id"), seenBy: actor)
        let body = try await supportBody(request, RecoverRequest.parse)
        if actor.role == .app, let problem = Recovery.appProblem(beforeCreation: body.beforeCreation) {
            throw Problem(.unprocessableContent, slug: "invalid-request", title: "Invalid request", fields: [problem])
        }
        let recovery = Recovery.bounded(subscriptionID: subscription.id, since: body.since, until: body.until,
                                        beforeCreation: body.beforeCreation, subscriptionCreatedAt: subscription.createdAt)
        let notFound = Problem.notFound("no subscription with id \"\(subscription.id)\"")
        if body.dryRun {
            guard let matched = try await store.countRecovery(recovery) else { throw notFound }
            return try JSONResponse.make(API.DryRunCount(matched: matched))
        }
        let replay: Replay?
        do {
            replay = try await store.startRecovery(recovery, actor: actor, reason: body.reason ?? "recover")
        } catch let error as ReplayError {
            throw Problem(error)
        }
        guard let replay else { throw notFound }
        replayStarted()
        metrics.replayRequested(kind: .recover)
        context.logger.info("recover started", metadata: [
            "replay.id": "\(replay.id)", "subscription.id": "\(subscription.id)", "actor": "\(actor.name)",
            "matched": "\(replay.matched)",
        ])
        return try JSONResponse.make(status: .accepted, API.Replay(replay))
    }

    /// The replay `id` if this principal may see it: staff any; an app token only a recover of
    /// a subscription it owns (404 otherwise, as for an unknown id).
    private func visibleReplay(_ id: String, to principal: Principal) async throws -> Replay {
        let notFound = Problem.notFound("no replay with id \"\(id)\"")
        guard let replay = try await store.replay(id: id) else { throw notFound }
        guard principal.role == .app else { return replay }
        guard replay.kind == .recover, let subscriptionID = replay.filter?.objectValue?["subscription_id"]?.stringValue else {
            throw notFound
        }
        do {
            _ = try await store.subscription(id: subscriptionID, seenBy: principal)
        } catch is Problem {
            throw notFound  // another app's (or a deleted) subscription: the replay is as unknown
        }
        return replay
    }

    @Sendable func start(_ request: Request, context: Context) async throws -> Response {
        let actor = try await authorizer.require(request, roles: .staff)
        let body = try await supportBody(request, BulkReplayRequest.parse)
        if body.dryRun {
            let matched = try await store.countReplay(body.filter)
            return try JSONResponse.make(API.DryRunCount(matched: matched))
        }
        let replay: Replay
        do {
            replay = try await store.startReplay(body.filter, actor: actor, reason: body.reason)
        } catch let error as ReplayError {
            throw Problem(error)
        }
        replayStarted()
        metrics.replayRequested(kind: .bulk)
        context.logger.info("bulk replay started", metadata: [
            "replay.id": "\(replay.id)", "actor": "\(actor.name)", "matched": "\(replay.matched)",
        ])
        return try JSONResponse.make(status: .accepted, API.Replay(replay))
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let principal = try await authorizer.require(request, roles: [.admin, .support, .app])
        return try JSONResponse.make(API.Replay(try await visibleReplay(try context.parameters.decoded("id"), to: principal)))
    }

    @Sendable func cancel(_ request: Request, context: Context) async throws -> Response {
        let actor = try await authorizer.require(request, roles: [.admin, .support, .app])
        let id = try context.parameters.decoded("id")
        _ = try await visibleReplay(id, to: actor)
        let body = try await supportBody(request, ReasonRequest.parse)
        let replay: Replay?
        do {
            replay = try await store.cancelReplay(id: id, actor: actor, reason: body.reason)
        } catch let error as ReplayError {
            throw Problem(error, replayID: id)
        }
        guard let replay else { throw Problem.notFound("no replay with id \"\(id)\"") }
        context.logger.info("replay cancelled", metadata: ["replay.id": "\(id)", "actor": "\(actor.name)"])
        return try JSONResponse.make(API.Replay(replay))
    }
}
