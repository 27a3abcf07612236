import EchoRelayCore
import EchoRelayQueue
import EchoRelayPostgres
import EchoRelayStandIns
import EchoRelayWorkers
import Foundation
import TestSupport
import Testing

/// The delivery worker claims again as soon as a slot frees when its last claim stopped at a
/// subscription's cap: a backlog drains at the subscriber's pace, not one claim a poll.
@Suite struct DeliveryWorkerClaimTests {
    @Test func aBacklogBeyondASubscriptionsCapDrainsWithoutWaitingForThePoll() async throws {
        // 30 due deliveries, left for a claim, and a poll a minute: only claims made as slots
        // free can deliver them in time.
        let count = 30
        try await ClaimAheadTests.withWorker(cap: 2, events: count, answerAfter: .zero) { _, _, subscriber, _ in
            let received = try await subscriber.waitForDeliveries(count: count, within: .seconds(30))
            #expect(Set(received.compactMap(\.webhookID)).count == count, "each delivery once")
        }
    }
}

/// A claim leases up to four times a subscription's cap (`claimCapPerSlot`), and the deliveries beyond its free
/// slots wait in memory for them: a slot that frees takes the next at once, not after another
/// claim's round trip. The cap on webhooks in flight holds all the same.
@Suite struct ClaimAheadTests {
    /// A delivery worker with this cap and a poll a minute, over `events` due deliveries to one
    /// subscriber that answers `200` after `delay`: left for a claim, as no process was handed them.
    static func withWorker(
        cap: Int, concurrency: Int? = nil, events: Int, answerAfter delay: Duration,
        _ body: @Sendable (PostgresEventStore, TestDatabase, StandInSubscriber, String) async throws -> Void
    ) async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let store = PostgresEventStore(client: client, logger: TestLogger.quiet)
                try await StandInSubscriber().run { subscriber in
                    subscriber.defaultAnswer = .hang(delay)  // then 200
                    let subscription = try await store.createSubscription(
                        SubscriptionFields(url: subscriber.url(), eventTypes: EventType.allCases, ordered: false),
                        ownerTokenID: nil, secret: WebhookSecret.generate())
                    for index in 0..<events { try await store.ingest("e\(index)", user: "u\(index)") }
                    try await store.verifyAll()
                    var configuration = DeliveryWorkerConfiguration()
                    configuration.allowPrivateSubscribers = true
                    configuration.perSubscriptionConcurrency = cap
                    if let concurrency { configuration.concurrency = concurrency }
                    configuration.pollInterval = .seconds(60)  // only claims made as slots free deliver in time
                    let worker = Task {
                        try await DeliveryWorker(store: store, wake: WakeSignal(), configuration: configuration, owner: "worker",
                                                 logger: TestLogger.quiet).run()
                    }
                    defer { worker.cancel() }
                    try await body(store, database, subscriber, subscription.id)
                }
            }
        }
    }

    @Test func aClaimLeasesAheadOfTheFreeSlotsAndTheCapStillHolds() async throws {
        let events = 12
        try await Self.withWorker(cap: 2, events: events, answerAfter: .milliseconds(300)) { _, database, subscriber, _ in
            _ = try await subscriber.waitForDeliveries(count: 2, within: .seconds(10))
            // The first two webhooks are out for 300 ms; the claim leased more behind them.
            #expect(try await database.count("deliveries", where: "status = 'pending' AND lease_owner = 'worker'")
                    == 2 * DeliveryQueue.claimCapPerSlot)
            let received = try await subscriber.waitForDeliveries(count: events, within: .seconds(30))
            #expect(Set(received.compactMap(\.webhookID)).count == events, "each delivery once")
            // Each webhook is answered 300 ms after it arrives: no three arrive within 250 ms.
            let times = received.map(\.receivedAt).sorted()
            for (first, third) in zip(times, times.dropFirst(2)) {
                #expect(third.timeIntervalSince(first) >= 0.25, "a third webhook went out while two were in flight")
            }
        }
    }

    /// What a claim leases ahead is bounded by the subscription's claim cap, not by the worker's
    /// free slots: with two slots in all, a claim still leases four times the subscription's
    /// cap, so that claims, one after another, are not what bounds the rate. Answered after
    /// half a second, the last of those leased go out after more than `loadedFresh`: they are
    /// loaded again first, while no slot is free for the inbox.
    @Test func aClaimLeasesAheadOfTheWorkersSlotsAsOfTheSubscriptions() async throws {
        try await Self.withWorker(cap: 2, concurrency: 2, events: 12, answerAfter: .milliseconds(500)) { _, database, subscriber, _ in
            _ = try await subscriber.waitForDeliveries(count: 2, within: .seconds(10))
            #expect(try await database.count("deliveries", where: "status = 'pending' AND lease_owner = 'worker'")
                    == 2 * DeliveryQueue.claimCapPerSlot)
            let received = try await subscriber.waitForDeliveries(count: 12, within: .seconds(30))
            #expect(Set(received.compactMap(\.webhookID)).count == 12, "each delivery once")
        }
    }

    /// A delivery that waited in memory longer than `loadedFresh` is loaded again before
    /// it goes: one whose subscription was deleted meanwhile (its deliveries cancelled) is not sent.
    @Test func aDeliveryClaimedAheadWhoseLeaseWasTakenBackIsNotSent() async throws {
        try await Self.withWorker(cap: 1, events: 3, answerAfter: .milliseconds(1500)) { store, database, subscriber, subscription in
            _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(10))
            #expect(try await database.count("deliveries", where: "lease_owner = 'worker'") == 3)
            #expect(try await store.deleteSubscription(id: subscription))
            try await Task.sleep(for: .seconds(3))  // the first is answered at 1.5 s; the others would follow
            #expect(subscriber.deliveries.count == 1)
        }
    }
}
