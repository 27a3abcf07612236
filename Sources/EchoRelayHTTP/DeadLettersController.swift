import EchoRelayAPI
import EchoRelayCore
import Hummingbird
import Logging

/// `/v1/dead-letters`: deliveries that exhausted their tries, and their redrive.
struct DeadLettersController<Context: RequestContext>: Sendable {
    let store: any EchoRelayStore
    let authorizer: BearerAuthorizer
    /// Called after deliveries were made pending again, to wake the delivery workers.
    let deliveriesCreated: @Sendable () -> Void

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/dead-letters", use: list)
        router.post("/v1/dead-letters/redrive", use: redrive)
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        try await authorizer.require(request, roles: .staff)
        var reader = QueryReader(request)
        let filter = DeadLetterFilter(subscriptionID: reader.string("subscription_id"), since: reader.time("since"),
                                      until: reader.time("until"))
        reader.checkRange(since: filter.since, until: filter.until)
        let cursor = reader.cursor()
        let page = try await reader.page { try await store.deadLetters(filter, beforeID: cursor, limit: $0) }
        return try JSONResponse.make(API.DeadLetterList(page, item: API.DeadLetter.init) { String($0.deliveryID) })
    }

    @Sendable func redrive(_ request: Request, context: Context) async throws -> Response {
        let actor = try await authorizer.require(request, roles: .staff)
        let body = try await supportBody(request, RedriveRequest.parse)
        let matched = try await store.redriveDeadLetters(body.filter, dryRun: body.dryRun, actor: actor, reason: body.reason)
        if !body.dryRun {
            deliveriesCreated()
            context.logger.info("dead letters redriven", metadata: ["actor": "\(actor.name)", "matched": "\(matched)"])
        }
        return try JSONResponse.make(API.DryRunCount(matched: matched, dry_run: body.dryRun))
    }
}
