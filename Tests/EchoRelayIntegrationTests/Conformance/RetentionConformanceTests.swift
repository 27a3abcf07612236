import EchoRelayCore
import EchoRelayServer
import Foundation
import Testing
import TestSupport

/// Retention on both stores: what is final for longer than its retention goes, in batches;
/// an event keeps its receipt, so a repeated push still gets its answer and the user's
/// sequence goes on; nothing that is not final is touched.
@Suite struct RetentionConformanceTests {
    /// "Now" an hour ahead, with a retention of a minute: everything final today is past it.
    static let later = Date().addingTimeInterval(3600)
    static let aMinute = Duration.seconds(60)

    @Test(arguments: StoreKind.all)
    func prunedEventsKeepReceiptsThatAnswerARepeatedPushAndOnlyFinalOnesArePruned(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe()
            let first = try await store.ingest("e1", user: "a", body: "one")
            try await store.ingest("e2", user: "a")
            try await store.ingest("e3", user: "b")
            try await store.verifyAll { task in
                task.eventID == "e3" ? .rejected(.unknownToken) : VerificationOutcome(status: .verified, reason: .providerConfirmed)
            }
            // e1 delivered (after a failed try); e2's delivery still pending: e2 is not final.
            for task in try await store.claimAllDeliveries() where task.eventID == "e1" {
                try await store.finish(task, .retry(after: .zero), status: 500)
            }
            for task in try await store.claimAllDeliveries() where task.eventID == "e1" { try await store.finish(task) }
            try await store.recordTestDelivery(subscriptionID: subscription.id, TestDelivery(
                webhookID: TestDelivery.newWebhookID(), attempt: DeliveryAttempt(startedAt: Date(), duration: .milliseconds(3),
                                                                                 statusCode: 200, errorKind: nil, error: nil, responseHead: "ok")))

            // Batches of one, so the walk must carry its cursor across batches.
            let pruning = Pruning(store: store, policy: RetentionPolicy(attempts: Self.aMinute, events: Self.aMinute), batchSize: 1,
                                  pause: .zero)
            let expected = PruneCounts(events: 1, deliveries: 1, attempts: 2, testDeliveries: 1)
            #expect(try await pruning.run(dryRun: true, now: Self.later) == expected)
            #expect(try await store.deliveries(eventID: "e1").count == 1, "a dry run removes nothing")
            #expect(try await pruning.run(dryRun: false, now: Self.later) == expected)
            #expect(try await pruning.run(dryRun: false, now: Self.later) == PruneCounts(), "nothing left to prune")

            let receipt = try #require(try await store.event(id: "e1"))
            #expect(receipt.prunedAt != nil && receipt.status == .verified && receipt.sequence == first.sequence)
            #expect(try await store.deliveries(eventID: "e1").isEmpty)
            #expect(try await store.event(id: "e2")?.prunedAt == nil, "an event with a pending delivery is not final")
            #expect(try await store.deliveries(eventID: "e2").count == 1)
            #expect(try await store.event(id: "e3")?.prunedAt == nil, "an event without deliveries has nothing to prune")

            // The receipt answers a repeated push, and the user's sequence goes on.
            let again = try await store.ingest("e1", user: "a", body: "one")
            #expect(again.isDuplicate && again.sequence == first.sequence)
            await #expect(throws: IngestError.conflict(id: "e1")) { try await store.ingest("e1", user: "a", body: "changed") }
            #expect(try await store.ingest("e4", user: "a").sequence == 3)
            let timeline = try await store.timeline(TimelineQuery(userID: "a"))
            #expect(timeline.first { $0.event.id == "e1" }?.event.prunedAt != nil)
            #expect(timeline.first { $0.event.id == "e2" }?.event.prunedAt == nil)

            // A recover does not send a pruned event as if it had never been received.
            for task in try await store.claimAllDeliveries() where task.eventID == "e2" { try await store.finish(task) }
            #expect(try await store.countRecovery(Recovery(subscriptionID: subscription.id, since: Date(timeIntervalSince1970: 0))) == 0)
        }
    }

    /// Attempt records go after their own, shorter retention; the deliveries stay.
    @Test(arguments: StoreKind.all)
    func attemptRecordsGoBeforeTheDeliveriesTheyBelongTo(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            _ = try await store.subscribe()
            for index in 1...3 { try await store.ingest("e\(index)", user: "u\(index)") }
            try await store.verifyAll()
            for task in try await store.claimAllDeliveries() { try await store.finish(task) }

            let attemptsOnly = Pruning(store: store, policy: RetentionPolicy(attempts: Self.aMinute, events: nil), batchSize: 2, pause: .zero)
            #expect(try await attemptsOnly.run(dryRun: false, now: Date()) == PruneCounts(), "not final for a minute yet")
            #expect(try await attemptsOnly.run(dryRun: false, now: Self.later) == PruneCounts(attempts: 3))
            for index in 1...3 {
                let deliveries = try await store.deliveries(eventID: "e\(index)")
                #expect(deliveries.count == 1 && deliveries.first?.status == .delivered && deliveries.first?.attempts.isEmpty == true)
                #expect(try await store.event(id: "e\(index)")?.prunedAt == nil)
            }

            // A dry run with both counts the attempts once, under the events they go with.
            let both = Pruning(store: store, policy: RetentionPolicy(attempts: Self.aMinute, events: Self.aMinute), pause: .zero)
            #expect(try await both.run(dryRun: true, now: Self.later) == PruneCounts(events: 3, deliveries: 3))
        }
    }
}
