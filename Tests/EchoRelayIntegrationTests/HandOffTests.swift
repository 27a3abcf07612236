import EchoRelayCore
import EchoRelayQueue
import EchoRelayPostgres
import Foundation
import PostgresNIO
import TestSupport
import Testing

/// Deliveries leased as they are written (`HandOff`): what may go at once goes to the
/// hand-off's owner without a claim; what must wait does not; and a lease whose process died
/// lapses to any other process with the same webhook-id.
@Suite struct HandOffTests {
    static func withStore(_ body: @Sendable (PostgresEventStore, PostgresClient) async throws -> Void) async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                try await body(PostgresEventStore(client: client, logger: TestLogger.quiet), client)
            }
        }
    }

    static func verified(_ task: VerificationTask) -> VerificationOutcome {
        VerificationOutcome(status: .verified, reason: .providerConfirmed, providerUserID: task.userID)
    }

    @Test func anOutcomeLeasesItsNewQueueHeadsAndAnEndedDeliveryLeasesTheNext() async throws {
        try await Self.withStore { store, _ in
            _ = try await store.subscribe(ordered: true)
            for (id, user) in [("a1", "a"), ("a2", "a"), ("b1", "b")] { try await store.ingest(id, user: user) }
            let handOff = HandOff(owner: "p1", lease: .seconds(60))
            var handed: [Int64] = []
            for task in try await store.claimVerifications(owner: "p1", limit: 10, lease: .seconds(60)) {
                let written = try await store.finishVerification(task, owner: "p1", outcome: Self.verified(task), handOff: handOff)
                #expect(written.kept)
                handed += written.handedOff
            }
            let tasks = try await store.leasedDeliveries(ids: handed, owner: "p1")
            #expect(tasks.map(\.eventID).sorted() == ["a1", "b1"], "a2 waits behind a1")
            #expect(tasks.allSatisfy { $0.attempts == 1 })
            #expect(try await store.leasedDeliveries(ids: handed, owner: "p2").isEmpty, "only the owner's leases")
            #expect(try await store.claimAllDeliveries().isEmpty, "nothing left for a claim")

            let a1 = try #require(tasks.first { $0.eventID == "a1" })
            let attempt = DeliveryAttempt(startedAt: Date(), duration: .milliseconds(3), statusCode: 200, errorKind: nil,
                                          error: nil, responseHead: nil)
            let recorded = try await store.recordDeliveryAttempt(a1, owner: "p1", attempt: attempt, next: .delivered,
                                                                 disableAfter: .seconds(86_400), handOff: handOff)
            #expect(recorded.kept)
            let next = try await store.leasedDeliveries(ids: recorded.handedOff, owner: "p1")
            #expect(next.map(\.eventID) == ["a2"], "the next of a1's queue, leased as a1 ended")
        }
    }

    /// `madeWorkDue` tells the worker whether a claim must look: false when everything that
    /// may go was handed over, true when a write left due deliveries unleased or, for an
    /// attempt, its subscription has due deliveries leased to nobody.
    @Test func aWriteSaysWhetherItLeftDueDeliveriesThatOnlyAClaimFinds() async throws {
        try await Self.withStore { store, _ in
            _ = try await store.subscribe(ordered: true)
            for (id, user) in [("a1", "a"), ("a2", "a"), ("b1", "b")] { try await store.ingest(id, user: user) }
            let handOff = HandOff(owner: "p1", lease: .seconds(60))
            let tasks = try await store.claimVerifications(owner: "p1", limit: 10, lease: .seconds(60))
            let byEvent = Dictionary(uniqueKeysWithValues: tasks.map { ($0.eventID, $0) })
            let a1 = try await store.finishVerification(try #require(byEvent["a1"]), owner: "p1",
                                                        outcome: Self.verified(try #require(byEvent["a1"])), handOff: handOff)
            #expect(a1.kept && a1.handedOff.count == 1)
            #expect(!a1.madeWorkDue, "its one delivery was handed over")
            let b1 = try await store.finishVerification(try #require(byEvent["b1"]), owner: "p1",
                                                        outcome: Self.verified(try #require(byEvent["b1"])), handOff: nil)
            #expect(b1.kept && b1.handedOff.isEmpty)
            #expect(b1.madeWorkDue, "without a hand-off its delivery is due for a claim")
            // a2 is still awaiting verification: a1's delivery ending unparks nothing yet.
            let a1Task = try #require(try await store.leasedDeliveries(ids: a1.handedOff, owner: "p1").first)
            let attempt = DeliveryAttempt(startedAt: Date(), duration: .milliseconds(3), statusCode: 200, errorKind: nil,
                                          error: nil, responseHead: nil)
            let ended = try await store.recordDeliveryAttempt(a1Task, owner: "p1", attempt: attempt, next: .delivered,
                                                              disableAfter: .seconds(86_400), handOff: handOff)
            #expect(ended.kept && ended.handedOff.isEmpty, "nothing was parked behind it")
            #expect(ended.madeWorkDue, "b1's delivery is due in the same subscription, leased to nobody: the freed slot is its")
            let a2 = try await store.finishVerification(try #require(byEvent["a2"]), owner: "p1",
                                                        outcome: Self.verified(try #require(byEvent["a2"])), handOff: handOff)
            #expect(a2.handedOff.count == 1, "a1's delivery has ended: a2's is a head, handed over")
            #expect(!a2.madeWorkDue)
            #expect(try await store.claimAllDeliveries().map(\.eventID) == ["b1"], "only b1's, as its write said")

            // Every delivery is now leased: an end leaves nothing for a claim.
            let a2Task = try #require(try await store.leasedDeliveries(ids: a2.handedOff, owner: "p1").first)
            let last = try await store.recordDeliveryAttempt(a2Task, owner: "p1", attempt: attempt, next: .delivered,
                                                             disableAfter: .seconds(86_400), handOff: handOff)
            #expect(last.kept && !last.madeWorkDue, "nothing due is left to nobody")
        }
    }

    /// An attempt asks for a claim only where one would find room: due deliveries leased to
    /// nobody, in a subscription whose other leases (webhooks in flight, hand-offs waiting in
    /// an inbox) leave room under the claim's cap. Under a backlog most asked-for claims found
    /// none, each a statement for nothing.
    @Test func anAttemptAsksForAClaimOnlyWhereTheCapLeavesRoom() async throws {
        try await Self.withStore { store, _ in
            _ = try await store.subscribe(ordered: false)
            for index in 0..<5 { try await store.ingest("e\(index)", user: "u\(index)") }
            for task in try await store.claimVerifications(owner: "p1", limit: 10, lease: .seconds(60)) {
                #expect(try await store.finishVerification(task, owner: "p1", outcome: Self.verified(task)))
            }
            let attempt = DeliveryAttempt(startedAt: Date(), duration: .milliseconds(3), statusCode: 200, errorKind: nil,
                                          error: nil, responseHead: nil)
            // Three leased, two due for nobody.
            let leased = try await store.claimDeliveries(owner: "p1", limit: 3, lease: .seconds(60), perSubscriptionCap: 3, answered: [])
            #expect(leased.count == 3)
            let full = try await store.recordDeliveryAttempt(leased[0], owner: "p1", attempt: attempt, next: .delivered,
                                                             disableAfter: .seconds(86_400), handOff: nil, perSubscriptionCap: 2)
            #expect(full.kept && !full.madeWorkDue, "the two other leases fill a cap of 2: a claim would find no room")
            let room = try await store.recordDeliveryAttempt(leased[1], owner: "p1", attempt: attempt, next: .delivered,
                                                             disableAfter: .seconds(86_400), handOff: nil, perSubscriptionCap: 2)
            #expect(room.kept && room.madeWorkDue, "one lease left under a cap of 2, and two due: a claim finds one")
            #expect(try await store.claimDeliveries(owner: "p1", limit: 10, lease: .seconds(60), perSubscriptionCap: 2,
                                                    answered: []).count == 1, "as the attempt said")
        }
    }

    @Test func anEndedDeliveryWhoseSuccessorWaitsForAnEarlierVerificationLeavesItForAClaim() async throws {
        try await Self.withStore { store, _ in
            // a2 stays unverified: a3's delivery must wait for its outcome, whatever a1's does.
            _ = try await store.subscribe(ordered: true)
            for id in ["a1", "a2", "a3"] { try await store.ingest(id, user: "a") }
            let handOff = HandOff(owner: "p1", lease: .seconds(60))
            let tasks = try await store.claimVerifications(owner: "p1", limit: 10, lease: .seconds(60))
            let byEvent = Dictionary(uniqueKeysWithValues: tasks.map { ($0.eventID, $0) })
            var handed: [Int64] = []
            for id in ["a1", "a3"] {
                let task = try #require(byEvent[id])
                handed += try await store.finishVerification(task, owner: "p1", outcome: Self.verified(task), handOff: handOff).handedOff
            }
            let a1Task = try #require(try await store.leasedDeliveries(ids: handed, owner: "p1").first { $0.eventID == "a1" })
            let attempt = DeliveryAttempt(startedAt: Date(), duration: .milliseconds(3), statusCode: 200, errorKind: nil,
                                          error: nil, responseHead: nil)
            let ended = try await store.recordDeliveryAttempt(a1Task, owner: "p1", attempt: attempt, next: .delivered,
                                                              disableAfter: .seconds(86_400), handOff: handOff)
            #expect(ended.handedOff.isEmpty, "a3 waits for a2's verification: not leased")
            #expect(ended.madeWorkDue, "a3 was unparked for the claim to decide")
        }
    }

    @Test func aHandedOffDeliveryWhoseProcessDiedIsClaimedByAnotherWithItsWebhookID() async throws {
        try await Self.withStore { store, _ in
            _ = try await store.subscribe(ordered: true)
            try await store.ingest("a1", user: "a")
            let task = try #require(try await store.claimVerifications(owner: "p1", limit: 1, lease: .seconds(60)).first)
            let written = try await store.finishVerification(
                task, owner: "p1", outcome: Self.verified(task),
                handOff: HandOff(owner: "p1", lease: .seconds(8)))
            let handed = try await store.leasedDeliveries(ids: written.handedOff, owner: "p1")
            #expect(handed.count == 1)
            // p1 dies here, before sending: nothing else knows of the hand-off.
            #expect(try await store.claimAllDeliveries().isEmpty, "leased to p1 for now")
            try await Task.sleep(for: .milliseconds(8_300))
            let claimed = try await store.claimAllDeliveries()
            #expect(claimed.map(\.webhookID) == handed.map(\.webhookID))
            #expect(claimed.first?.attempts == 2, "the lapsed hand-off counts as a try")
        }
    }

    /// On both stores: the ingest completer hands what it writes to the verifier's inbox.
    @Test(arguments: [StoreKind.postgres, .sqlite])
    func anIngestHandsItsEventsToTheVerifierOfItsProcessAndALapsedLeaseGoesToAnother(_ kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            // Leases of 8 s: long enough that a machine busy with the rest of the suite does
            // not let one lapse before the steps that rely on it being held.
            let inbox = VerificationInbox(handOff: HandOff(owner: "p1", lease: .seconds(8)), capacity: 1)
            let wake = WakeSignal()
            let completers = Completers(statements: store, verifications: HandOffTarget(inbox: inbox, wake: wake))
            #expect(try await completers.ingest(.example("e1", user: "u")).handedOff, "its receipt says so: no claim is needed")
            #expect(!wake.takeClaimRequest(), "the verifier is woken for its inbox, not to claim")
            let handed = inbox.take(upTo: 10).map(\.item)
            #expect(handed.map(\.eventID) == ["e1"])
            #expect(handed.first?.echo != nil, "the worker gets the echo credentials in memory")
            #expect(try await store.claimVerifications(owner: "p2", limit: 10, lease: .seconds(60)).isEmpty, "leased to p1")

            _ = try await completers.ingest(.example("e2", user: "u"))
            #expect(try await !completers.ingest(.example("e3", user: "u")).handedOff, "its receipt says a claim must find it")
            #expect(inbox.take(upTo: 10).map(\.item.eventID) == ["e2"], "no room for e3: it is left to a claim")
            #expect(try await store.claimVerifications(owner: "p2", limit: 10, lease: .seconds(60)).map(\.eventID) == ["e3"])

            // p1 dies with e1 and e2 in memory: their leases lapse and p2 claims them.
            try await Task.sleep(for: .milliseconds(8_300))
            let claimed = try await store.claimVerifications(owner: "p2", limit: 10, lease: .seconds(60))
            #expect(claimed.map(\.eventID).sorted() == ["e1", "e2"])
            #expect(claimed.allSatisfy { $0.attempts == 2 })
            let first = try #require(handed.first)
            #expect(try await !store.finishVerification(first, owner: "p1", outcome: .rejected(.unknownToken)),
                    "p1's lease is over")
        }
    }
}
