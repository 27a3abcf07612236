import EchoRelayCore
import EchoRelayPostgres
import Foundation
import PostgresNIO
import TestSupport
import Testing

/// Only a queue's head is due: what parking and unparking can get wrong, on both stores, and
/// the races between processes on PostgreSQL.
@Suite struct QueueHeadsConformanceTests {
    @Test(arguments: StoreKind.all)
    func aUsersBacklogWaitsBehindItsHeadThroughARetryAndGoesOutInSequence(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let ordered = try await store.subscribe(ordered: true)
            for index in 1...30 { try await store.ingest("a\(index)", user: "a") }
            try await store.ingest("b1", user: "b")
            try await store.verifyAll()

            var delivered: [String] = []
            var retried = false
            while delivered.count < 31 {
                let claimed = try await store.claimAllDeliveries()
                let users = claimed.map(\.userID)
                #expect(Set(users).count == users.count, "one delivery per user's queue at a time: \(claimed.map(\.eventID))")
                #expect(claimed.allSatisfy { $0.subscriptionID == ordered.id })
                if claimed.isEmpty {
                    try await Task.sleep(for: .milliseconds(20))  // until the retry below is due
                    continue
                }
                for task in claimed {
                    if task.eventID == "a12" && !retried {
                        // A retry in the middle of the queue: it stays the head, the rest wait.
                        retried = true
                        try await store.finish(task, .retry(after: .milliseconds(200)), status: 503)
                        // On a slow machine the retry may be due already: a12 may come back, never a13.
                        let meanwhile = try await store.claimAllDeliveries()
                        #expect(meanwhile.allSatisfy { $0.userID != "a" || $0.eventID == "a12" }, "a13 and on wait for a12's retry")
                        for other in meanwhile {
                            try await store.finish(other)
                            delivered.append(other.eventID)
                        }
                    } else {
                        try await store.finish(task)
                        delivered.append(task.eventID)
                    }
                }
            }
            #expect(delivered.filter { $0.hasPrefix("a") } == (1...30).map { "a\($0)" })
            #expect(delivered.filter { $0 == "b1" }.count == 1)
            #expect(retried)
        }
    }

    /// The next delivery of a queue is due from when it was made, not from when its head
    /// ended: a claim with room for one takes it before a delivery made after it. Due from
    /// its unpark, each step of a user's queue went to the back of a backlog, and under the
    /// overload benchmark a user with several events waited for the whole backlog once an
    /// event (p99 25 s).
    @Test(arguments: StoreKind.all)
    func aQueuesNextDeliveryGoesBeforeDeliveriesMadeAfterIt(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            _ = try await store.subscribe(ordered: true)
            for id in ["a1", "a2"] { try await store.ingest(id, user: "a") }
            try await store.verifyAll()
            let a1 = try await store.claimAllDeliveries()
            #expect(a1.map(\.eventID) == ["a1"], "a2 waits behind a1")
            try await Task.sleep(for: .milliseconds(20))  // the stores keep time to the microsecond
            try await store.ingest("b1", user: "b")
            try await store.verifyAll()
            try await store.finish(try #require(a1.first))
            let next = try await store.claimDeliveries(owner: "conformance", limit: 1, lease: .seconds(60), perSubscriptionCap: 100,
                                                       answered: [])
            #expect(next.map(\.eventID) == ["a2"], "a2's delivery was made before b1's")
        }
    }

    @Test(arguments: StoreKind.all)
    func aSubscriptionDisabledAndEnabledAgainGoesOnWithItsWaitingQueue(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe(ordered: true)
            for index in 1...3 { try await store.ingest("a\(index)", user: "a") }
            try await store.verifyAll()
            let first = try await store.claimAllDeliveries()
            #expect(first.map(\.eventID) == ["a1"])

            _ = try await store.setSubscriptionEnabled(id: subscription.id, false, reason: "maintenance")
            try await store.finish(try #require(first.first))  // the one in flight lands while disabled
            #expect(try await store.claimAllDeliveries().isEmpty, "nothing goes to a disabled subscription")

            _ = try await store.setSubscriptionEnabled(id: subscription.id, true, reason: nil)
            let second = try await store.claimAllDeliveries()
            #expect(second.map(\.eventID) == ["a2"])
            try await store.finish(try #require(second.first))
            #expect(try await store.claimAllDeliveries().map(\.eventID) == ["a3"])
        }
    }

    @Test(arguments: StoreKind.all)
    func aDeliveryMadeDueOutOfOrderIsParkedByTheClaimNotSent(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe(ordered: true)
            for index in 1...3 { try await store.ingest("a\(index)", user: "a") }
            try await store.verifyAll()
            let head = try #require(try await store.claimAllDeliveries().first)
            #expect(head.eventID == "a1")
            // A replay of a3 is due at once, though a1 is still in flight and a2 waits.
            _ = try await store.replayEvent(id: "a3", subscriptionIDs: [subscription.id], actor: supportActor, reason: "test")
            #expect(try await store.claimAllDeliveries().isEmpty, "the replay of a3 waits behind a1 and a2")
            try await store.finish(head)
            var order: [String] = []
            while let next = try await store.claimAllDeliveries().first {
                order.append(next.eventID + (next.replay == nil ? "" : " (replay)"))
                try await store.finish(next)
            }
            // a3 and its replay share a sequence, so they may go in either order after a2.
            #expect(order.first == "a2")
            #expect(Set(order.dropFirst()) == ["a3", "a3 (replay)"])
        }
    }

    /// A park that races with its blocker becoming final in another transaction strands the
    /// parked delivery; the sweep of recent parks finds it. The stranded state is made here
    /// directly: the blocker made final without the unparking its statement would do.
    @Test func aParkedQueueWhoseHeadBecameFinalElsewhereIsFoundByTheSweep() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let store = PostgresEventStore(client: client, logger: TestLogger.quiet)
                _ = try await store.subscribe(ordered: true)
                for index in 1...2 { try await store.ingest("a\(index)", user: "a") }
                try await store.verifyAll()
                #expect(try await client.count("deliveries", where: "parked_at IS NOT NULL") == 1, "a2 is parked as it is made")
                let head = try #require(try await store.claimAllDeliveries().first)
                #expect(head.eventID == "a1")
                try await client.query("UPDATE deliveries SET status = 'delivered', finished_at = now() WHERE event_id = 'a1'")
                #expect(try await store.claimAllDeliveries().isEmpty, "a2 is parked and nothing unparked it")

                #expect(try await store.unparkStrandedDeliveries(parkedSince: Date(timeIntervalSinceNow: 30)) == 0,
                        "the frequent sweep looks only at what was parked since the time it is given")
                #expect(try await store.unparkStrandedDeliveries(parkedSince: Date(timeIntervalSinceNow: -30)) == 1)
                #expect(try await store.claimAllDeliveries().map(\.eventID) == ["a2"])
            }
        }
    }

    /// Two processes verify one user's events at the same moment while a third delivers: the
    /// subscriber still gets each event once, in sequence, with no more help than the worker's
    /// own sweep of recent parks.
    @Test func twoProcessesFinishingOneUsersEventsAtOnceKeepItsOrder() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                try await database.withClient { otherClient in
                    let first = PostgresEventStore(client: client, logger: TestLogger.quiet)
                    let second = PostgresEventStore(client: otherClient, logger: TestLogger.quiet)
                    _ = try await first.subscribe(ordered: true)
                    let count = 40
                    for index in 1...count { try await first.ingest("a\(index)", user: "a") }
                    let tasks = try await first.claimVerifications(owner: "conformance", limit: count, lease: .seconds(60))
                    #expect(tasks.count == count)

                    let delivered = try await withThrowingTaskGroup(of: [String].self) { group in
                        for (store, parity) in [(first, 0), (second, 1)] {
                            group.addTask {
                                for task in tasks where task.sequence % 2 == Int64(parity) {
                                    _ = try await store.finishVerification(task, owner: "conformance", outcome: VerificationOutcome(
                                        status: .verified, reason: .providerConfirmed, providerUserID: task.userID))
                                }
                                return []
                            }
                        }
                        group.addTask {
                            var order: [String] = []
                            let deadline = ContinuousClock.now + .seconds(30)
                            while order.count < count, ContinuousClock.now < deadline {
                                let claimed = try await second.claimAllDeliveries()
                                #expect(claimed.count <= 1, "one at a time: \(claimed.map(\.eventID))")
                                for task in claimed {
                                    try await second.finish(task)
                                    order.append(task.eventID)
                                }
                                if claimed.isEmpty {
                                    _ = try await first.unparkStrandedDeliveries(parkedSince: Date(timeIntervalSinceNow: -30))
                                    try await Task.sleep(for: .milliseconds(2))
                                }
                            }
                            return order
                        }
                        return try await group.reduce(into: []) { $0 += $1 }
                    }
                    #expect(delivered == (1...count).map { "a\($0)" })
                }
            }
        }
    }
}
