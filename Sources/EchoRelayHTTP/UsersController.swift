import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

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
        return try JSONResponse.make(UserView(user))
    }
}

struct UserView: Encodable {
    let userID: String
    let state: String
    let phoneNumber: String?
    let lastSequence: Int64
    let lastEventAt: String
    let updatedAt: String

    init(_ user: UserState) {
        userID = user.userID
        state = user.state.rawValue
        phoneNumber = user.phoneNumber
        lastSequence = user.lastSequence
        lastEventAt = RFC3339.format(user.lastEventAt)
        updatedAt = RFC3339.format(user.updatedAt)
    }

    enum CodingKeys: String, CodingKey {
        case state
        case userID = "user_id"
        case phoneNumber = "phone_number"
        case lastSequence = "last_sequence"
        case lastEventAt = "last_event_at"
        case updatedAt = "updated_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userID, forKey: .userID)
        try container.encode(state, forKey: .state)
        try container.encode(phoneNumber, forKey: .phoneNumber)  // null when unknown, not absent
        try container.encode(lastSequence, forKey: .lastSequence)
        try container.encode(lastEventAt, forKey: .lastEventAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}
