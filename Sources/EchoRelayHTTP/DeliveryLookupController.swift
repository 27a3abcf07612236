import EchoRelayAPI
import EchoRelayCore
import Hummingbird

/// `GET /v1/deliveries/{webhook_id}`: "the backend says it got `msg_…`: what was it?" Staff
/// see any delivery; an app token sees those of its own subscriptions, and `404` for any
/// other, as if it did not exist.
struct DeliveryLookupController<Context: RequestContext>: Sendable {
    let store: any EchoRelayStore
    let authorizer: BearerAuthorizer

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/deliveries/{webhook_id}", use: show)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let principal = try await authorizer.require(request, roles: [.admin, .support, .app])
        let webhookID = try context.parameters.decoded("webhook_id")
        guard let found = try await Self.lookUp(webhookID, seenBy: principal, store: store) else {
            throw Problem.notFound("no delivery with webhook-id \"\(webhookID.prefix(60))\"")
        }
        return try JSONResponse.make(found)
    }

    /// The delivery as `principal` may see it; nil when there is none, or none for them.
    static func lookUp(_ webhookID: String, seenBy principal: Principal, store: any EchoRelayStore) async throws -> API.WebhookDelivery? {
        guard webhookID.count <= 100, let found = try await store.deliveries(webhookID: webhookID),
              let event = try await store.event(id: found.eventID) else { return nil }
        let subscription = try await store.subscription(id: found.subscriptionID)
        if principal.role == .app, subscription?.ownerTokenID != principal.tokenID { return nil }
        return API.WebhookDelivery(
            webhook_id: webhookID,
            event: API.DeliveredEvent(
                id: event.id, type: event.type.rawValue, user_id: event.userID, sequence: event.sequence, status: event.status.rawValue,
                reason: event.reason?.rawValue, occurred_at: RFC3339.format(event.occurredAt),
                received_at: RFC3339.format(event.receivedAt), verified_at: event.verifiedAt.map(RFC3339.format)
            ),
            subscription_id: found.subscriptionID, subscription: subscription.map { API.Subscription($0) },
            deliveries: found.deliveries.map(API.Delivery.init)
        )
    }
}
