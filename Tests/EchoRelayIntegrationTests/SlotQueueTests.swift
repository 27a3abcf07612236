import EchoRelayCore
import EchoRelayPostgres
import EchoRelayStandIns
import EchoRelayWorkers
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import TestSupport
import Testing

/// Deliveries handed off to a worker whose subscription is at its cap wait for one of its
/// webhooks to end, and every other subscription's go past them. Before, they went back to
/// the front of the inbox: once the front was all a slow subscriber's, the other
/// subscribers' hand-offs (leased, so no claim took them either) waited for the slow one.
@Suite struct SlotQueueTests {
    @Test func aSlowSubscriberAtItsCapDoesNotHoldUpAnotherSubscribersHandOffs() async throws {
        let events = 8
        let subscriber = SlowAndFast()
        try await HandOffTests.withStore { store, _ in
            try await LoopbackServer.run(subscriber.router()) { port in
                for path in ["slow", "fast"] {
                    _ = try await store.createSubscription(
                        SubscriptionFields(url: "http://127.0.0.1:\(port)/hooks/\(path)", eventTypes: EventType.allCases, ordered: false),
                        ownerTokenID: nil, secret: WebhookSecret.generate())
                }
                var configuration = DeliveryWorkerConfiguration()
                configuration.allowPrivateSubscribers = true
                configuration.concurrency = 4
                configuration.perSubscriptionConcurrency = 2
                let inbox = DeliveryWorker.inbox(owner: "worker", configuration: configuration)
                let wake = WakeSignal()

                // Every event's two deliveries handed off to the worker as verification writes them.
                for index in 0..<events { try await store.ingest("e\(index)", user: "u\(index)") }
                for task in try await store.claimVerifications(owner: "verifier", limit: events, lease: .seconds(60)) {
                    let handOff = try #require(inbox.request(count: 2), "room in the inbox for both")
                    let written = try await store.finishVerification(
                        task, owner: "verifier", outcome: VerificationOutcome(status: .verified, reason: .providerConfirmed), handOff: handOff)
                    #expect(written.handedOff.count == 2)
                    inbox.add(written.handedOff)
                }

                let worker = Task {
                    try await DeliveryWorker(store: store, wake: wake, configuration: configuration, owner: "worker",
                                             handOffs: inbox, logger: TestLogger.quiet).run()
                }
                defer { worker.cancel() }
                wake.wake(claim: false)

                try await waitUntil(within: .seconds(10), "every fast delivery (\(subscriber.fastAnswered) of \(events) so far, \(subscriber.slowHeld) slow held)") { subscriber.fastAnswered == events }
                #expect(subscriber.slowHeld == 2, "the slow subscriber has its cap in flight, and no more")
                #expect(subscriber.slowAnswered == 0)

                subscriber.releaseSlow()
                try await waitUntil(within: .seconds(20), "every slow delivery") { subscriber.slowAnswered == events }
            }
        }
    }
}

/// Two subscribers on one loopback server: `/hooks/fast` answers at once; `/hooks/slow` holds
/// each webhook until released (or 30 s).
private final class SlowAndFast: Sendable {
    private let state = Mutex((slowHeld: 0, slowAnswered: 0, fastAnswered: 0, released: false))

    var slowHeld: Int { state.withLock { $0.slowHeld } }
    var slowAnswered: Int { state.withLock { $0.slowAnswered } }
    var fastAnswered: Int { state.withLock { $0.fastAnswered } }

    func releaseSlow() { state.withLock { $0.released = true } }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/hooks/fast") { _, _ -> HTTPResponse.Status in
            self.state.withLock { $0.fastAnswered += 1 }
            return .noContent
        }
        router.post("/hooks/slow") { _, _ -> HTTPResponse.Status in
            self.state.withLock { $0.slowHeld += 1 }
            let deadline = ContinuousClock.now + .seconds(30)
            while !self.state.withLock({ $0.released }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            self.state.withLock { $0.slowHeld -= 1; $0.slowAnswered += 1 }
            return .noContent
        }
        return router
    }
}
