import EchoRelayAPI
import EchoRelayCore
import Hummingbird

/// `GET /v1/users/{user_id}`: the user's current verified state.
struct UsersController<Context: RequestContext>: Sendable {
    let store: any EventStore
    let authorizer: BearerAuthorizer

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/users/{user_id}", use: show)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        _ = try await authorizer.require(request, roles: .staff)
        let userID = try context.parameters.decoded("user_id")
        guard let user = try await store.user(id: userID) else {
            throw Problem.notFound("no verified state for user \"\(userID)\": no event of theirs has been verified yet")
        }
        return try JSONResponse.make(API.User(user))
    }
}
