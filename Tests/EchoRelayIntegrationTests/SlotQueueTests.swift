import EchoRelayCore
import EchoRelayQueue
import EchoRelayPostgres
import EchoRelayStandIns
import EchoRelayWorkers
import Foundation
import HTTPTypes
import Hummingbird
import ServiceLifecycleTestKit
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

/// A hand-off that waited for its subscription's slot is sent as it was loaded only within
/// `DeliveryQueue.loadedFresh` of its hand-off; past that it is loaded again first, so one
/// whose subscription was deleted meanwhile (its deliveries cancelled) is not sent.
@Suite struct WaitedForASlotTests {
    @Test func aHandOffThatWaitedLongForASlotIsLoadedAgainAndNotSentOnceItsLeaseWasTakenBack() async throws {
        try await OneSubscription.run(answeringAfter: .milliseconds(1500)) { store, subscription, subscriber in
            let inbox = DeliveryWorker.inbox(owner: "worker", configuration: subscription.settings)
            try await subscription.handOff(["e0", "e1", "e2"], to: inbox, store: store)
            let worker = OneSubscription.start(store, subscription.settings, inbox, wake: WakeSignal(), claim: false)
            defer { worker.cancel() }
            // One slot: e0 goes, and e1 and e2, loaded with it, wait for the slot.
            try await waitUntil(within: .seconds(10), "the first webhook") { subscriber.arrivals.count == 1 }
            #expect(try await store.deleteSubscription(id: subscription.subscription.id))
            try await Task.sleep(for: .seconds(3))  // e0 is answered at 1.5 s; e1 would follow
            #expect(subscriber.arrivals.count == 1, "sent after its subscription was deleted")
        }
    }
}

/// A hand-off is sent from memory only while its lease leaves room for a webhook and its
/// record (`DeliveryQueue.sendableFor`): what waits past that time behind a slow subscriber
/// is forgotten, and once its lease lapses a claim sends it, once. Sent later from memory, a
/// claim could take it while its webhook was still out.
@Suite struct StaleHandOffTests {
    @Test func handOffsThatWaitedPastTheirTimeGoToAClaimAfterTheirLeaseAndOutOnce() async throws {
        let deliveries = 8
        try await OneSubscription.run(answeringAfter: .milliseconds(800)) { store, subscription, subscriber in
            var settings = subscription.settings
            // A hand-off sent at the last moment (3 s) is answered by 3.8 s, and its record
            // has 6.2 s before the lease ends: under the whole suite's load on 2 cores a
            // record took more than the 2.1 s a 4 s lease left, and its delivery went twice.
            // The webhook's time limit is well above the answer's 0.8 s: with 1 s, an answer
            // slowed by that load timed out, and the retry sent the delivery again.
            settings.lease = .seconds(10)
            settings.timeout = .seconds(4)
            settings.pollInterval = .milliseconds(200)
            let inbox = DeliveryWorker.inbox(owner: "worker", configuration: settings)
            let handedOff = ContinuousClock.now
            try await subscription.handOff((0..<deliveries).map { "e\($0)" }, to: inbox, store: store)
            let worker = OneSubscription.start(store, settings, inbox, wake: WakeSignal(), claim: false)
            defer { worker.cancel() }

            // One at a time, 0.8 s each: about four go out within the 3 s a hand-off may
            // wait; the rest wait for their 10 s leases to lapse.
            try await waitUntil(within: .seconds(40), "every delivery (\(subscriber.arrivals.count) so far)") {
                subscriber.arrivals.count >= deliveries
            }
            try await Task.sleep(for: .milliseconds(500))  // a second copy of any would arrive by now
            let arrivals = subscriber.arrivals
            #expect(Set(arrivals.map(\.webhookID)).count == deliveries && arrivals.count == deliveries,
                    "each once: \(arrivals.map { "\($0.webhookID.suffix(6)) at \($0.at - handedOff)" })")
            let late = arrivals.filter { $0.at - handedOff >= settings.lease }
            #expect(!late.isEmpty, "those that waited past their time went to a claim once their lease lapsed")
            #expect(late.count < deliveries, "the first went from memory, without a claim")
        }
    }
}

/// A delivery that only a claim finds (written without a hand-off) goes before the
/// hand-offs of its subscription that wait in memory: they hold leases but no slot, so the
/// claim's cap does not count them, and what a claim leased takes the next free slot. Before,
/// the claim found the subscription's slots taken by them, and under a backlog such a delivery
/// waited until the flow of hand-offs stopped. The claim runs beside the loop, so the first
/// hand-off goes out while it runs.
@Suite struct ClaimFirstTests {
    @Test func aDeliveryOnlyAClaimFindsGoesBeforeNewerHandOffsOfItsSubscription() async throws {
        try await OneSubscription.run(answeringAfter: .milliseconds(300)) { store, subscription, subscriber in
            let inbox = DeliveryWorker.inbox(owner: "worker", configuration: subscription.settings)
            // b1's as another process would write it: no hand-off to this worker.
            try await subscription.handOff(["b1", "c1", "c2", "c3"], to: inbox, store: store, except: ["b1"])
            let worker = OneSubscription.start(store, subscription.settings, inbox, wake: WakeSignal(), claim: true)
            defer { worker.cancel() }

            try await waitUntil(within: .seconds(10), "every delivery (\(subscriber.arrivals.count) so far)") {
                subscriber.arrivals.count >= 4
            }
            let order = subscriber.arrivals.map { subscription.events[$0.webhookID] ?? $0.webhookID }
            #expect(order == ["c1", "b1", "c2", "c3"], "the claim's delivery at the first free slot, then the hand-offs in their order")
        }
    }
}

/// At a graceful stop, hand-offs that never went out are given back, so that another process
/// sends them at once instead of after their leases lapse (a minute by default; under a
/// backlog, thousands of them).
@Suite struct HandOffsAtStopTests {
    @Test func aStoppedWorkerGivesBackWhatWasHandedOffAndNotSent() async throws {
        let deliveries = 4
        try await OneSubscription.run(answeringAfter: .seconds(30)) { store, subscription, subscriber in
            var settings = subscription.settings
            settings.shutdownGrace = .milliseconds(200)
            let inbox = DeliveryWorker.inbox(owner: "worker", configuration: settings)
            try await subscription.handOff((0..<deliveries).map { "e\($0)" }, to: inbox, store: store)
            #expect(try await store.claimAllDeliveries().isEmpty, "all leased to the worker")

            try await testGracefulShutdown { trigger in
                let worker = OneSubscription.start(store, settings, inbox, wake: WakeSignal(), claim: false)
                try await waitUntil(within: .seconds(10), "one webhook out") { subscriber.arrivals.count == 1 }
                trigger.triggerGracefulShutdown()
                try await worker.value
            }
            let claimed = try await store.claimAllDeliveries()
            #expect(claimed.count == deliveries, "the three that waited and the one cancelled at the stop: \(claimed.map(\.eventID))")
            #expect(claimed.allSatisfy { $0.attempts == 1 }, "giving back does not count a try")
        }
    }
}

/// One unordered subscription whose webhooks a loopback `Delayed` subscriber answers, and a
/// delivery worker's settings for it: four webhook slots, one for the subscription.
private struct OneSubscription {
    let subscription: Subscription
    var settings: DeliveryWorkerConfiguration
    /// Event ids by the webhook-id of their delivery.
    var events: [String: String] = [:]

    static func run(answeringAfter delay: Duration,
                    _ body: @Sendable (PostgresEventStore, inout OneSubscription, Delayed) async throws -> Void) async throws {
        let subscriber = Delayed(by: delay)
        try await HandOffTests.withStore { store, _ in
            try await LoopbackServer.run(subscriber.router()) { port in
                var settings = DeliveryWorkerConfiguration()
                settings.allowPrivateSubscribers = true
                settings.concurrency = 4
                settings.perSubscriptionConcurrency = 1
                var fixture = OneSubscription(subscription: try await store.createSubscription(
                    SubscriptionFields(url: "http://127.0.0.1:\(port)/hooks", eventTypes: EventType.allCases, ordered: false),
                    ownerTokenID: nil, secret: WebhookSecret.generate()), settings: settings)
                try await body(store, &fixture, subscriber)
            }
        }
    }

    /// Ingests an event of its own user for each id, verifies them in that order and hands
    /// their deliveries to `inbox`, as a verify worker of the same process would; those in
    /// `except` are written without a hand-off.
    mutating func handOff(_ ids: [String], to inbox: DeliveryInbox, store: PostgresEventStore, except: Set<String> = []) async throws {
        for id in ids { try await store.ingest(id, user: "u-\(id)") }
        let tasks = try await store.claimVerifications(owner: "verifier", limit: ids.count, lease: .seconds(60))
        let byEvent = Dictionary(uniqueKeysWithValues: tasks.map { ($0.eventID, $0) })
        for id in ids {
            let task = try #require(byEvent[id])
            let written = try await store.finishVerification(
                task, owner: "verifier", outcome: VerificationOutcome(status: .verified, reason: .providerConfirmed),
                handOff: except.contains(id) ? nil : inbox.request())
            inbox.add(written.handedOff)
            events[WebhookID.make(eventID: id, subscriptionID: subscription.id)] = id
        }
    }

    /// A delivery worker running on `inbox`, woken once.
    static func start(_ store: PostgresEventStore, _ settings: DeliveryWorkerConfiguration, _ inbox: DeliveryInbox,
                      wake: WakeSignal, claim: Bool) -> Task<Void, any Error> {
        let worker = Task {
            try await DeliveryWorker(store: store, wake: wake, configuration: settings, owner: "worker",
                                     handOffs: inbox, logger: TestLogger.quiet).run()
        }
        wake.wake(claim: claim)
        return worker
    }
}

/// A subscriber that answers each webhook after `delay`, and notes when each arrived.
private final class Delayed: Sendable {
    let delay: Duration
    private let state = Mutex<[(webhookID: String, at: ContinuousClock.Instant)]>([])

    init(by delay: Duration) { self.delay = delay }

    var arrivals: [(webhookID: String, at: ContinuousClock.Instant)] { state.withLock { $0 } }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/hooks") { request, _ -> HTTPResponse.Status in
            let id = request.headers[HTTPField.Name("webhook-id")!] ?? ""
            self.state.withLock { $0.append((id, ContinuousClock.now)) }
            try await Task.sleep(for: self.delay)
            return .noContent
        }
        return router
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
