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
        return try JSONResponse.make(status: .accepted, ReplayView(replay))
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        try await authorizer.require(request, roles: .staff)
        let id = try context.parameters.decoded("id")
        guard let replay = try await store.replay(id: id) else { throw Problem.notFound("no replay with id \"\(id)\"") }
        return try JSONResponse.make(ReplayView(replay))
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
        return try JSONResponse.make(ReplayView(replay))
    }
}

/// What a dry run answers: the count, and that nothing changed.
struct DryRunView: Encodable {
    let matched: Int
    let dry_run = true
}

struct ReplayView: Encodable {
    let replay: Replay

    init(_ replay: Replay) {
        self.replay = replay
    }

    struct Actor: Encodable {
        let name: String
        let role: String
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, state, reason, actor, filter, matched, sent, delivered, failed
        case eventID = "event_id"
        case createdAt = "created_at"
        case finishedAt = "finished_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(replay.id, forKey: .id)
        try container.encode(replay.kind.rawValue, forKey: .kind)
        try container.encode(replay.state.rawValue, forKey: .state)
        try container.encode(replay.reason, forKey: .reason)
        try container.encode(Actor(name: replay.actorName, role: replay.actorRole), forKey: .actor)
        try container.encode(replay.eventID, forKey: .eventID)
        try container.encode(replay.filter, forKey: .filter)
        try container.encode(replay.matched, forKey: .matched)
        try container.encode(replay.sent, forKey: .sent)
        try container.encode(replay.delivered, forKey: .delivered)
        try container.encode(replay.failed, forKey: .failed)
        try container.encode(RFC3339.format(replay.createdAt), forKey: .createdAt)
        try container.encode(replay.finishedAt.map(RFC3339.format), forKey: .finishedAt)
    }
}
