import EchoRelayAPI
import EchoRelayCore
import Hummingbird

/// `GET /v1/events/{id}`: one stored event for an administrator. The echo credentials are
/// never part of the answer.
struct EventsController<Context: RequestContext>: Sendable {
    let store: any EchoRelayStore
    let authorizer: BearerAuthorizer

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/events/{id}", use: show)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        _ = try await authorizer.require(request, roles: .staff)
        let id = try context.parameters.decoded("id")
        guard let event = try await store.event(id: id) else {
            throw Problem.notFound("no event with id \"\(id)\"")
        }
        let origin = event.source == .set ? try await store.securityEvent(eventID: id) : nil
        return try JSONResponse.make(API.Event(event, deliveries: try await store.deliveries(eventID: id), securityEvent: origin))
    }
}
