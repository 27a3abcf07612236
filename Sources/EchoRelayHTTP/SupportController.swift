import EchoRelayAPI
import EchoRelayCore
import Hummingbird
import Logging

/// What support staff do with one user or one event: read a user's timeline, replay an event,
/// re-verify an unverifiable one. Every change is audited with its reason.
struct SupportController<Context: RequestContext>: Sendable {
    let store: any EchoRelayStore
    let authorizer: BearerAuthorizer
    /// Called after new deliveries or verification work were committed, to wake their workers.
    let workCreated: @Sendable (CreatedWork) -> Void
    let metrics: RelayMetrics
    /// The proofs a re-verification may bring.
    let acceptedProofs: AcceptedProofs

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/users/{user_id}", use: user)
        router.get("/v1/users/{user_id}/events", use: timeline)
        router.get("/v1/events", use: recentEvents)
        router.get("/v1/events/{id}", use: event)
        router.post("/v1/events/{id}/replay", use: replay)
        router.post("/v1/events/{id}/reverify", use: reverify)
    }

    /// The user's current verified state.
    @Sendable func user(_ request: Request, context: Context) async throws -> Response {
        try await authorizer.require(request, roles: .staff)
        let userID = try context.parameters.decoded("user_id")
        guard let user = try await store.user(id: userID) else {
            throw Problem.notFound("no verified state for user \"\(userID)\": no event of theirs has been verified yet")
        }
        return try JSONResponse.make(API.User(user))
    }

    @Sendable func timeline(_ request: Request, context: Context) async throws -> Response {
        try await authorizer.require(request, roles: .staff)
        let userID = try context.parameters.decoded("user_id")
        var reader = QueryReader(request)
        var query = TimelineQuery(userID: userID)
        query.types = reader.list("type", expected: "an event type (\(EventType.allCases.map(\.rawValue).joined(separator: ", ")))",
                                  EventType.init(rawValue:))
        query.statuses = reader.list("status", expected: "an event status (\(EventStatus.allCases.map(\.rawValue).joined(separator: ", ")))",
                                     EventStatus.init(rawValue:))
        query.since = reader.time("since")
        query.until = reader.time("until")
        reader.checkRange(since: query.since, until: query.until)
        query.beforeSequence = reader.cursor()
        let page = try await reader.page { rows in
            query.limit = rows
            return try await store.timeline(query)
        }
        return try JSONResponse.make(API.Timeline(page, item: API.TimelineEvent.init) { String($0.event.sequence) })
    }

    /// Events of every user, newest received first, by type, status, reason, subscription
    /// and time received.
    @Sendable func recentEvents(_ request: Request, context: Context) async throws -> Response {
        try await authorizer.require(request, roles: .staff)
        var reader = QueryReader(request)
        var query = reader.recentEvents()
        let page = try await reader.page { rows in
            query.limit = rows
            return try await store.recentEvents(query)
        }
        return try JSONResponse.make(API.Timeline(page, item: API.TimelineEvent.init) { RecentEventsCursor(after: $0.event).text })
    }

    /// One stored event. The echo credentials are never part of the answer.
    @Sendable func event(_ request: Request, context: Context) async throws -> Response {
        try await authorizer.require(request, roles: .staff)
        let id = try context.parameters.decoded("id")
        guard let event = try await store.event(id: id) else {
            throw Problem.notFound("no event with id \"\(id)\"")
        }
        let origin = event.source == .set ? try await store.securityEvent(eventID: id) : nil
        return try JSONResponse.make(API.Event(event, deliveries: try await store.deliveries(eventID: id), securityEvent: origin))
    }

    @Sendable func replay(_ request: Request, context: Context) async throws -> Response {
        let actor = try await authorizer.require(request, roles: .staff)
        let eventID = try context.parameters.decoded("id")
        let body = try await supportBody(request, ReplayEventRequest.parse)
        let receipt: ReplayReceipt
        do {
            receipt = try await store.replayEvent(id: eventID, subscriptionIDs: body.subscriptionIDs, actor: actor, reason: body.reason)
        } catch let error as ReplayError {
            throw Problem(error, eventID: eventID)
        }
        workCreated(.delivery)
        metrics.replayRequested(kind: .event)
        context.logger.info("event replayed", metadata: [
            "event.id": "\(eventID)", "replay.id": "\(receipt.id)", "actor": "\(actor.name)", "matched": "\(receipt.matched)",
        ])
        return try JSONResponse.make(status: .accepted, API.ReplayReceipt(id: receipt.id, event_id: receipt.eventID, matched: receipt.matched, subscription_ids: receipt.subscriptionIDs))
    }

    @Sendable func reverify(_ request: Request, context: Context) async throws -> Response {
        let actor = try await authorizer.require(request, roles: .staff)
        let eventID = try context.parameters.decoded("id")
        let body = try await supportBody(request) { (bytes) throws(EventParseError) in
            try ReverifyRequest.parse(bytes, missingProof: acceptedProofs.missingProof)
        }
        if let event = try await store.event(id: eventID), let problem = acceptedProofs.problem(body.proof.path, type: event.type) {
            throw Problem(.unprocessableContent, slug: "invalid-request", title: "Invalid request", fields: [problem])
        }
        do {
            try await store.reverify(eventID: eventID, proof: body.proof, actor: actor, reason: body.reason)
        } catch let error as ReplayError {
            throw Problem(error, eventID: eventID)
        }
        workCreated(.verification)
        context.logger.info("event sent for re-verification", metadata: [
            "event.id": "\(eventID)", "actor": "\(actor.name)", "verify.path": "\(body.proof.path.rawValue)",
        ])
        return try JSONResponse.make(status: .accepted, API.ReverifyAccepted(id: eventID, status: EventStatus.pending.rawValue))
    }
}

extension Problem {
    /// The answer to a replay, cancel or re-verify the store refused.
    init(_ error: ReplayError, eventID: String? = nil, replayID: String? = nil) {
        switch error {
        case .eventNotFound:
            self = .notFound("no event with id \"\(eventID ?? "")\"")
        case .notVerified(let status):
            self.init(.conflict, slug: "not-verified", title: "Event not verified",
                      detail: "event \"\(eventID ?? "")\" is \(status.rawValue); only verified events are delivered, so only they can be replayed"
                        + (status == .unverifiable ? " (re-verify it first with POST /v1/events/{id}/reverify)" : ""))
        case .unknownSubscriptions(let ids):
            let reason = "no subscription that wants this event's type has the id " + ids.map { "\"\($0)\"" }.joined(separator: ", ")
            self.init(.unprocessableContent, slug: "invalid-request", title: "Invalid request",
                      fields: [FieldProblem(field: "subscription_ids", reason: reason)])
        case .finished(let state):
            self.init(.conflict, slug: "replay-finished", title: "Replay finished",
                      detail: "replay \"\(replayID ?? "")\" is already \(state.rawValue)")
        case .notUnverifiable(let status):
            self.init(.conflict, slug: "not-unverifiable", title: "Event not unverifiable",
                      detail: "event \"\(eventID ?? "")\" is \(status.rawValue); only an unverifiable event can be re-verified")
        case .noSubscription(let type):
            self.init(.unprocessableContent, slug: "nothing-to-replay", title: "Nothing to replay",
                      detail: "no enabled subscription wants \(type) events, so a replay of event \"\(eventID ?? "")\" would send nothing;"
                        + " name one in subscription_ids (a disabled one is taken), or enable or create one first")
        case .nothingToRecover:
            self.init(.unprocessableContent, slug: "nothing-to-recover", title: "Nothing to recover",
                      detail: "the subscription has received, or still has pending, every verified event of its types"
                        + " received in this window, so a recover would send nothing")
        case .nothingMatched:
            self.init(.unprocessableContent, slug: "nothing-to-replay", title: "Nothing to replay",
                      detail: "no original delivery to a subscription that is not deleted (and enabled, unless named) matches"
                        + " this filter, so the replay would send nothing; a dry run (\"dry_run\": true) counts the matches")
        }
    }
}
