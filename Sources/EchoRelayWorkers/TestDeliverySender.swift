import EchoRelayCore
import Foundation

/// Sends test deliveries (`POST /v1/subscriptions/{id}/test`) as the delivery workers send
/// webhooks: the subscriber's address checked first, signed with every active secret, bounded
/// by the delivery timeout; but at once, in the request, and never retried.
public struct TestDeliverySender: Sendable {
    let configuration: DeliveryWorkerConfiguration
    let addressChecks: AddressChecks

    public init(configuration: DeliveryWorkerConfiguration) {
        self.configuration = configuration
        self.addressChecks = AddressChecks(configuration)
    }

    public func send(to subscription: Subscription, secrets: [Secret]) async -> TestDelivery {
        let webhookID = TestDelivery.newWebhookID()
        let startedAt = Date()
        let clock = ContinuousClock()
        let start = clock.now
        let answer: WebhookClient.Answer
        switch await addressChecks.decision(for: subscription.url, allowPrivate: configuration.allowPrivateSubscribers) {
        case .refused(let refusal):
            answer = refusal
        case .send(to: let address):
            // Tests are rare: a client of their own, closed after, needs no service to own it.
            let client = WebhookClient(timeout: configuration.timeout, connectTimeout: configuration.connectTimeout,
                                       caFile: configuration.subscriberCAFile)
            let body = TestDelivery.body(subscriptionID: subscription.id, sentAt: startedAt)
            let keys = secrets.compactMap { try? WebhookSecret($0.revealed) }
            answer = await client.post(url: subscription.url, connectingTo: address,
                                       headers: WebhookClient.signedHeaders(webhookID: webhookID, body: body, secrets: keys), body: body)
            await client.shutdown()
        }
        return TestDelivery(webhookID: webhookID, attempt: DeliveryAttempt(
            startedAt: startedAt, duration: clock.now - start, statusCode: answer.statusCode, errorKind: answer.errorKind,
            error: answer.error, responseHead: answer.responseHead
        ))
    }
}
