import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// `GET /v1/events/{id}`: one stored event for an administrator. The echo credentials are
/// never part of the answer.
struct EventsController<Context: RequestContext>: Sendable {
    let store: any EventStore
    let authorizer: BearerAuthorizer

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/events/{id}", use: show)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        try authorizer.requireAdmin(request)
        let id = try context.parameters.require("id")
        guard let event = try await store.event(id: id) else {
            throw Problem.notFound("no event with id \"\(id)\"")
        }
        return try JSONResponse.make(EventView(event))
    }
}

/// The JSON shape of a stored event.
struct EventView: Encodable {
    let id: String
    let type: String
    let userID: String
    let sequence: Int64
    let occurredAt: String
    let receivedAt: String
    let status: String

    init(_ event: StoredEvent) {
        self.id = event.id
        self.type = event.type.rawValue
        self.userID = event.userID
        self.sequence = event.sequence
        self.occurredAt = RFC3339.format(event.occurredAt)
        self.receivedAt = RFC3339.format(event.receivedAt)
        self.status = event.status.rawValue
    }

    enum CodingKeys: String, CodingKey {
        case id, type, sequence, status
        case userID = "user_id"
        case occurredAt = "occurred_at"
        case receivedAt = "received_at"
    }
}
