import EchoRelayCore
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
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let store = PostgresEventStore(client: client, logger: TestLogger.quiet)
                try await StandInSubscriber().run { subscriber in
                    _ = try await store.createSubscription(
                        SubscriptionFields(url: subscriber.url(), eventTypes: EventType.allCases, ordered: false),
                        ownerTokenID: nil, secret: WebhookSecret.generate())
                    // 30 due deliveries, left for a claim: no process was handed them.
                    let count = 30
                    for index in 0..<count { try await store.ingest("e\(index)", user: "u\(index)") }
                    try await store.verifyAll()
                    var configuration = DeliveryWorkerConfiguration()
                    configuration.allowPrivateSubscribers = true
                    configuration.perSubscriptionConcurrency = 2
                    // A poll a minute: only claims made as slots free can deliver 30 in time.
                    configuration.pollInterval = .seconds(60)
                    let worker = Task {
                        try await DeliveryWorker(store: store, wake: WakeSignal(), configuration: configuration, owner: "worker",
                                                 logger: TestLogger.quiet).run()
                    }
                    defer { worker.cancel() }
                    let received = try await subscriber.waitForDeliveries(count: count, within: .seconds(30))
                    #expect(Set(received.compactMap(\.webhookID)).count == count, "each delivery once")
                }
            }
        }
    }
}
