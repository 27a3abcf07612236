import Foundation

/// A test delivery (`POST /v1/subscriptions/{id}/test`): one signed `echorelay.test` webhook
/// sent at once, outside every user's sequence, never retried, its one attempt recorded.
public struct TestDelivery: Sendable, Equatable {
    public static let type = "echorelay.test"

    /// A fresh id each time: a test is never a retry of another.
    public var webhookID: String
    public var attempt: DeliveryAttempt

    public init(webhookID: String, attempt: DeliveryAttempt) {
        self.webhookID = webhookID
        self.attempt = attempt
    }

    /// `msg_` and 26 random hex digits: the form of every `webhook-id`.
    public static func newWebhookID() -> String {
        "msg_" + String(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(26))
    }

    /// The body, canonical as every delivery's (sorted keys, no white space):
    /// `{"data":{},"sent_at":"…","subscription_id":"sub_…","type":"echorelay.test"}`.
    public static func body(subscriptionID: String, sentAt: Date) -> [UInt8] {
        var out = CanonicalJSONWriter(capacity: 128)
        out.appendLiteral("{\"data\":{},\"sent_at\":")
        out.appendString(RFC3339.format(sentAt))
        out.appendLiteral(",\"subscription_id\":")
        out.appendString(subscriptionID)
        out.appendLiteral(",\"type\":")
        out.appendString(type)
        out.appendLiteral("}")
        return out.bytes
    }
}

/// Sends a test delivery to a subscription, signed with these secrets (the current one first).
public typealias SendTestDelivery = @Sendable (_ subscription: Subscription, _ secrets: [Secret]) async -> TestDelivery

/// The storage of test deliveries.
public protocol TestDeliveryStore: Sendable {
    /// The subscription's signing secrets, opened: the current one, then the previous one while
    /// it still signs. Nil when there is no such subscription.
    func signingSecrets(subscriptionID: String) async throws -> [Secret]?

    /// Records a test delivery's attempt.
    func recordTestDelivery(subscriptionID: String, _ delivery: TestDelivery) async throws
}
