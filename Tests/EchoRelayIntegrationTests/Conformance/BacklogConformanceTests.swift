import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// The backlog reading behind `ECHORELAY_BACKLOG_LIMIT`, on both stores: which events count
/// as not yet final, that each counts once, that the count stops at its cap, and that the
/// arrivals counter moves with every new verification item.
@Suite struct BacklogConformanceTests {
    @Test(arguments: StoreKind.all)
    func anEventCountsUntilItIsFinalForEveryEnabledSubscriptionAndOnlyOnce(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            #expect(try await store.sampleBacklog(countingUpTo: 100) == BacklogSample(count: 0, arrivals: 0))
            let first = try await store.subscribe(types: [.tokenRotated])
            let second = try await store.subscribe(types: [.tokenRotated])
            let off = try await store.subscribe(types: [.tokenRotated])
            _ = try await store.setSubscriptionEnabled(id: off.id, false, reason: "off")
            try await store.ingest("e1", user: "a")
            try await store.ingest("e2", user: "b")
            try await store.ingest("e3", user: "c")
            #expect(try await store.sampleBacklog(countingUpTo: 100) == BacklogSample(count: 3, arrivals: 3), "awaiting verification")
            #expect(try await store.sampleBacklog(countingUpTo: 2).count == 2, "counted up to the cap only")

            // e3 is rejected: final. e1 and e2 are verified: each has two pending deliveries
            // (and none to the disabled subscription), and counts once.
            try await store.verifyAll { task in
                task.eventID == "e3" ? .rejected(.unknownToken) : VerificationOutcome(status: .verified, reason: .providerConfirmed)
            }
            #expect(try await store.sampleBacklog(countingUpTo: 100) == BacklogSample(count: 2, arrivals: 3))
            #expect(try await store.sampleBacklog(countingUpTo: 1).count == 1)

            let tasks = try await store.claimAllDeliveries()
            #expect(tasks.count == 4)
            for task in tasks where task.eventID == "e1" { try await store.finish(task) }
            // e2 delivered to one subscription, retrying for the other: still not final.
            try await store.finish(try #require(tasks.first { $0.eventID == "e2" && $0.subscriptionID == first.id }))
            let retrying = try #require(tasks.first { $0.eventID == "e2" && $0.subscriptionID == second.id })
            try await store.finish(retrying, .retry(after: .seconds(60)), status: 503)
            #expect(try await store.sampleBacklog(countingUpTo: 100).count == 1)

            // A replay re-sends an event already final: it is not backlog.
            _ = try await store.replayEvent(id: "e1", subscriptionIDs: nil, actor: supportActor, reason: "lost")
            #expect(try await store.sampleBacklog(countingUpTo: 100).count == 1)

            // Disabling the subscription still owed e2 takes it off the backlog: it waits for
            // an operator, not for the workers. Enabling it puts it back.
            _ = try await store.setSubscriptionEnabled(id: second.id, false, reason: "down")
            #expect(try await store.sampleBacklog(countingUpTo: 100).count == 0)
            _ = try await store.setSubscriptionEnabled(id: second.id, true, reason: nil)
            #expect(try await store.sampleBacklog(countingUpTo: 100).count == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func aSubscriptionThatIsDownStopsCountingAndCountsAgainFromItsFirstSuccess(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let up = try await store.subscribe(types: [.tokenRotated])
            let down = try await store.subscribe(types: [.tokenRotated])
            try await store.ingest("e1", user: "a")
            try await store.ingest("e2", user: "b")
            try await store.verifyAll { _ in VerificationOutcome(status: .verified, reason: .providerConfirmed) }
            let tasks = try await store.claimAllDeliveries()
            #expect(tasks.count == 4)
            for task in tasks where task.subscriptionID == up.id { try await store.finish(task) }
            for task in tasks where task.subscriptionID == down.id { try await store.finish(task, .retry(after: .zero), status: 503) }

            // Failing, but not for long: still counted, by the default grace too.
            #expect(try await store.sampleBacklog(countingUpTo: 100, downAfter: .seconds(60)).count == 2)
            #expect(try await store.sampleBacklog(countingUpTo: 100).count == 2)
            // Failing for longer than the grace: down, and its deliveries do not count.
            #expect(try await store.sampleBacklog(countingUpTo: 100, downAfter: .zero).count == 0)
            // Events awaiting verification count whatever the subscribers do.
            try await store.ingest("e3", user: "c")
            #expect(try await store.sampleBacklog(countingUpTo: 100, downAfter: .zero).count == 1)

            // One success and it is up again: what it is still owed counts (e2, and e3).
            let retried = try await store.claimAllDeliveries()
            #expect(Set(retried.map(\.eventID)) == ["e1", "e2"])
            try await store.finish(try #require(retried.first { $0.eventID == "e1" }))
            #expect(try await store.sampleBacklog(countingUpTo: 100, downAfter: .zero).count == 2)
        }
    }

    @Test(arguments: StoreKind.all)
    func arrivalsCountEveryNewVerificationItemAndNeverGoBack(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await store.ingest("e1", user: "a")
            try await store.ingest("e1", user: "a")  // the same event again: nothing new
            try await store.ingest("e2", user: "a")
            try await store.verifyAll { _ in .unverifiable(.providerUnavailable) }
            #expect(try await store.sampleBacklog(countingUpTo: 100) == BacklogSample(count: 0, arrivals: 2),
                    "the items are gone, the counter stays")
            let echo = EchoCredentials(serviceProvider: "https://api.example.com/fresh", authorization: Secret("OAuth fresh"))
            try await store.reverify(eventID: "e1", proof: .echo(echo), actor: supportActor, reason: "provider back")
            #expect(try await store.sampleBacklog(countingUpTo: 100) == BacklogSample(count: 1, arrivals: 3), "a reverified event is back")
        }
    }
}
