import EchoRelayAPI
import EchoRelayCore
import Foundation
import Hummingbird

/// `/v1/subscriptions/{id}/deliveries`: what happened to a subscription's deliveries, for the
/// app backend that owns it (its `app` token) and for staff (`admin`, `support`), so that a
/// team can answer "did you send us user X's deactivation?" itself.
struct SubscriptionDeliveriesController<Context: RequestContext>: Sendable {
    let store: any SubscriptionStore & SubscriptionDeliveryStore
    let authorizer: BearerAuthorizer

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/subscriptions/{id}/deliveries", use: list)
        router.get("/v1/subscriptions/{id}/deliveries/{delivery_id}/attempts", use: attempts)
    }

    /// The subscription if this principal may read it; 404 otherwise (another app's too, so
    /// that an app cannot learn which ids other apps have).
    private func readable(_ request: Request, _ context: Context) async throws -> Subscription {
        let principal = try await authorizer.require(request, roles: [.admin, .support, .app])
        let id = try context.parameters.decoded("id")
        guard let subscription = try await store.subscription(id: id),
              principal.role != .app || subscription.ownerTokenID == principal.tokenID
        else { throw Problem.notFound("no subscription with id \"\(id)\"") }
        return subscription
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let subscription = try await readable(request, context)
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
        let limit = reader.limit()
        try reader.finish()
        let page = try await PageCut.fetch(limit: limit) {
            try await store.subscriptionDeliveries(subscriptionID: subscription.id, filter, beforeID: cursor, limit: $0)
        }
        return try JSONResponse.make(PageView("deliveries", page, cursor: { String($0.id) }, view: API.SubscriptionDelivery.init))
    }

    @Sendable func attempts(_ request: Request, context: Context) async throws -> Response {
        let subscription = try await readable(request, context)
        let text = try context.parameters.decoded("delivery_id")
        guard let deliveryID = Int64(text), deliveryID > 0,
              let attempts = try await store.deliveryAttempts(subscriptionID: subscription.id, deliveryID: deliveryID)
        else { throw Problem.notFound("subscription \(subscription.id) has no delivery with id \"\(text.prefix(40))\"") }
        return try JSONResponse.make(API.DeliveryAttemptList(attempts: attempts.map(API.DeliveryAttempt.init)))
    }
}
