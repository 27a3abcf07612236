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

/// The JSON shape of a stored event. Outcome fields are null until there is an outcome.
struct EventView: Encodable {
    let event: StoredEvent

    init(_ event: StoredEvent) {
        self.event = event
    }

    enum CodingKeys: String, CodingKey {
        case id, type, sequence, status, reason
        case userID = "user_id"
        case occurredAt = "occurred_at"
        case receivedAt = "received_at"
        case decidedAt = "decided_at"
        case verifiedAt = "verified_at"
        case provider
    }

    /// What the provider answered: the values subscribers will be sent.
    struct ProviderValues: Encodable {
        let user_id: String?
        let phone_number: String?
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event.id, forKey: .id)
        try container.encode(event.type.rawValue, forKey: .type)
        try container.encode(event.userID, forKey: .userID)
        try container.encode(event.sequence, forKey: .sequence)
        try container.encode(RFC3339.format(event.occurredAt), forKey: .occurredAt)
        try container.encode(RFC3339.format(event.receivedAt), forKey: .receivedAt)
        try container.encode(event.status.rawValue, forKey: .status)
        try container.encode(event.reason?.rawValue, forKey: .reason)
        try container.encode(event.decidedAt.map(RFC3339.format), forKey: .decidedAt)
        try container.encode(event.verifiedAt.map(RFC3339.format), forKey: .verifiedAt)
        let provider = event.providerUserID == nil && event.providerPhoneNumber == nil
            ? nil : ProviderValues(user_id: event.providerUserID, phone_number: event.providerPhoneNumber)
        try container.encode(provider, forKey: .provider)
    }
}
