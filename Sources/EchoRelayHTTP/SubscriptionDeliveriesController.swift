import EchoRelayAPI
import EchoRelayCore
import Hummingbird
import Logging

/// `/v1/subscriptions/{id}/deliveries` and `/test`: what happened to a subscription's
/// deliveries, and a test delivery sent at once, for the app backend that owns it (its `app`
/// token) and for staff (`admin`, `support`), so that a team can answer "did you send us user
/// X's deactivation?" and "does our endpoint work?" itself.
struct SubscriptionDeliveriesController<Context: RequestContext>: Sendable {
    let store: any SubscriptionStore & SubscriptionDeliveryStore & TestDeliveryStore & AuditStore
    let authorizer: BearerAuthorizer
    let sendTestDelivery: SendTestDelivery?

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/subscriptions/{id}/deliveries", use: list)
        router.get("/v1/subscriptions/{id}/deliveries/{delivery_id}/attempts", use: attempts)
        if sendTestDelivery != nil { router.post("/v1/subscriptions/{id}/test", use: test) }
    }

    /// The subscription if this principal may use it; 404 otherwise (another app's too, so
    /// that an app cannot learn which ids other apps have).
    private func readable(_ request: Request, _ context: Context) async throws -> (Principal, Subscription) {
        let principal = try await authorizer.require(request, roles: [.admin, .support, .app])
        return (principal, try await store.subscription(id: try context.parameters.decoded("id"), seenBy: principal))
    }

    /// Sends a signed `echorelay.test` delivery now and answers with what the subscriber did.
    /// No body is read. A disabled subscription can be tested too: that is how a team checks
    /// its endpoint before enabling it again.
    @Sendable func test(_ request: Request, context: Context) async throws -> Response {
        let (principal, subscription) = try await readable(request, context)
        guard let sendTestDelivery, let secrets = try await store.signingSecrets(subscriptionID: subscription.id) else {
            throw Problem.notFound("no subscription with id \"\(subscription.id)\"")
        }
        let sent = await sendTestDelivery(subscription, secrets)
        try await store.recordTestDelivery(subscriptionID: subscription.id, sent)
        try await store.recordAudit(actor: principal, action: "subscription.test", target: subscription.id, filter: nil,
                                    matched: nil, reason: nil)
        context.logger.info("test delivery sent", metadata: [
            "subscription.id": "\(subscription.id)", "http.status": "\(sent.attempt.statusCode.map(String.init) ?? "none")",
        ])
        return try JSONResponse.make(API.TestDeliveryResult(
            webhook_id: sent.webhookID, delivered: sent.attempt.statusCode.map { (200..<300).contains($0) } ?? false,
            attempt: API.DeliveryAttempt(sent.attempt)
        ))
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let (_, subscription) = try await readable(request, context)
        var reader = QueryReader(request)
        let filter = SubscriptionDeliveryFilter(
            status: reader.one("status", expected: "a delivery status (\(DeliveryStatus.allCases.map(\.rawValue).joined(separator: ", ")))",
                               DeliveryStatus.init(rawValue:)),
            type: reader.one("type", expected: "an event type (\(EventType.allCases.map(\.rawValue).joined(separator: ", ")))",
                             EventType.init(rawValue:)),
            userID: reader.string("user_id"), since: reader.time("since"), until: reader.time("until")
        )
        reader.checkRange(since: filter.since, until: filter.until)
        let cursor = reader.cursor()
        let page = try await reader.page {
            try await store.subscriptionDeliveries(subscriptionID: subscription.id, filter, beforeID: cursor, limit: $0)
        }
        return try JSONResponse.make(API.SubscriptionDeliveryList(page, item: API.SubscriptionDelivery.init) { String($0.id) })
    }

    @Sendable func attempts(_ request: Request, context: Context) async throws -> Response {
        let (_, subscription) = try await readable(request, context)
        let text = try context.parameters.decoded("delivery_id")
        guard let deliveryID = Int64(text), deliveryID > 0,
              let attempts = try await store.deliveryAttempts(subscriptionID: subscription.id, deliveryID: deliveryID)
        else { throw Problem.notFound("subscription \(subscription.id) has no delivery with id \"\(text.prefix(40))\"") }
        return try JSONResponse.make(API.DeliveryAttemptList(attempts: attempts.map(API.DeliveryAttempt.init)))
    }
}
