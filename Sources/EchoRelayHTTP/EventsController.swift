import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

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
        return try JSONResponse.make(EventView(event, deliveries: try await store.deliveries(eventID: id), securityEvent: origin))
    }
}

/// The JSON shape of a stored event. Outcome fields are null until there is an outcome.
struct EventView: Encodable {
    let event: StoredEvent
    let deliveries: [DeliveryRecord]
    /// The SET it came as, for an event pushed to `POST /v1/sets`.
    let securityEvent: SecurityEventRecord?

    init(_ event: StoredEvent, deliveries: [DeliveryRecord], securityEvent: SecurityEventRecord? = nil) {
        self.event = event
        self.deliveries = deliveries
        self.securityEvent = securityEvent
    }

    enum CodingKeys: String, CodingKey {
        case id, type, sequence, status, reason
        case userID = "user_id"
        case occurredAt = "occurred_at"
        case receivedAt = "received_at"
        case decidedAt = "decided_at"
        case verifiedAt = "verified_at"
        case provider, deliveries, source
        case securityEvent = "security_event"
    }

    /// Where a SET's event came from: its transmitter, id and event type.
    struct Origin: Encodable {
        let issuer: String
        let jti: String
        let event_type: String
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
        try container.encode(event.source.rawValue, forKey: .source)
        try container.encode(securityEvent.map { Origin(issuer: $0.issuer, jti: $0.jti, event_type: $0.eventType) }, forKey: .securityEvent)
        try container.encode(deliveries.map(DeliveryView.init), forKey: .deliveries)
    }
}

/// One delivery of an event, with every attempt.
struct DeliveryView: Encodable {
    let delivery: DeliveryRecord

    struct AttemptView: Encodable {
        let started_at: String
        let duration_ms: Int
        let status_code: Int?
        let error_kind: String?
        let error: String?
        let response_head: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(started_at, forKey: .started_at)
            try container.encode(duration_ms, forKey: .duration_ms)
            try container.encode(status_code, forKey: .status_code)
            try container.encode(error_kind, forKey: .error_kind)
            try container.encode(error, forKey: .error)
            try container.encode(response_head, forKey: .response_head)
        }

        enum CodingKeys: String, CodingKey { case started_at, duration_ms, status_code, error_kind, error, response_head }
    }

    enum CodingKeys: String, CodingKey {
        case status, attempts
        case subscriptionID = "subscription_id"
        case replayID = "replay_id"
        case webhookID = "webhook_id"
        case createdAt = "created_at"
        case finishedAt = "finished_at"
        case nextAttemptAt = "next_attempt_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(delivery.subscriptionID, forKey: .subscriptionID)
        try container.encode(delivery.replayID, forKey: .replayID)
        try container.encode(delivery.webhookID, forKey: .webhookID)
        try container.encode(delivery.status.rawValue, forKey: .status)
        try container.encode(RFC3339.format(delivery.createdAt), forKey: .createdAt)
        try container.encode(delivery.finishedAt.map(RFC3339.format), forKey: .finishedAt)
        try container.encode(delivery.nextAttemptAt.map(RFC3339.format), forKey: .nextAttemptAt)
        try container.encode(delivery.attempts.map { attempt in
            AttemptView(
                started_at: RFC3339.format(attempt.startedAt), duration_ms: Int(attempt.duration.components.seconds * 1000
                    + attempt.duration.components.attoseconds / 1_000_000_000_000_000),
                status_code: attempt.statusCode, error_kind: attempt.errorKind?.rawValue, error: attempt.error,
                response_head: attempt.responseHead
            )
        }, forKey: .attempts)
    }
}
