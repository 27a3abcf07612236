import EchoRelayAPI
import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// `/v1/replays`: bulk replays by filter, with a dry-run count, progress and cancel.
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
    }

    @Sendable func start(_ request: Request, context: Context) async throws -> Response {
        let actor = try await authorizer.require(request, roles: .staff)
        let body = try await supportBody(request, BulkReplayRequest.parse)
        if body.dryRun {
            let matched = try await store.countReplay(body.filter)
            return try JSONResponse.make(DryRunView(matched: matched))
        }
        let replay: Replay
        do {
            replay = try await store.startReplay(body.filter, actor: actor, reason: body.reason)
        } catch let error as ReplayError {
            throw Problem(error)
        }
        replayStarted()
        metrics.replayRequested(kind: "bulk")
        context.logger.info("bulk replay started", metadata: [
            "replay.id": "\(replay.id)", "actor": "\(actor.name)", "matched": "\(replay.matched)",
        ])
        return try JSONResponse.make(status: .accepted, API.Replay(replay))
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        try await authorizer.require(request, roles: .staff)
        let id = try context.parameters.decoded("id")
        guard let replay = try await store.replay(id: id) else { throw Problem.notFound("no replay with id \"\(id)\"") }
        return try JSONResponse.make(API.Replay(replay))
    }

    @Sendable func cancel(_ request: Request, context: Context) async throws -> Response {
        let actor = try await authorizer.require(request, roles: .staff)
        let id = try context.parameters.decoded("id")
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

/// What a dry run answers: the count, and that nothing changed.
struct DryRunView: Encodable {
    let matched: Int
    let dry_run = true
}
