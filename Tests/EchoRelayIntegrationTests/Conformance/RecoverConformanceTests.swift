import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// Recover on both stores: a subscription gets, once each and in per-user order, the verified
/// events of its types that it never received — those verified while it was disabled and
/// those dead-lettered — and nothing it has or still has pending.
@Suite struct RecoverConformanceTests {
    static let longAgo = Date(timeIntervalSince1970: 1_700_000_000)

    @Test(arguments: StoreKind.all)
    func aRecoverSendsWhatWasMissedWhileDisabledInPerUserOrderExactlyOnce(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let recovering = try await store.subscribe(types: [.tokenRotated])
            let other = try await store.subscribe()
            func settleOther() async throws {
                for task in try await store.claimAllDeliveries() where task.subscriptionID == other.id { try await store.finish(task) }
            }

            // a1 reaches both; a2 is dead-lettered to `recovering` with a 410, which disables it.
            try await store.ingest("a1", user: "a")
            try await store.verifyAll()
            for task in try await store.claimAllDeliveries() { try await store.finish(task) }
            try await store.ingest("a2", user: "a")
            try await store.verifyAll()
            for task in try await store.claimAllDeliveries() {
                try await store.finish(task, task.subscriptionID == recovering.id ? .dead(disableSubscription: "410 Gone") : .delivered,
                                       status: task.subscriptionID == recovering.id ? 410 : 200)
            }
            #expect(try await store.subscription(id: recovering.id)?.enabled == false)

            // While it is disabled: a3 and b1 get no delivery to it, and a4 is not of its types.
            try await store.ingest("a3", user: "a")
            try await store.ingest("b1", user: "b")
            try await store.ingest("a4", user: "a", type: .phoneChanged, phone: "+15555550100")
            try await store.verifyAll()
            try await settleOther()

            let recovery = Recovery(subscriptionID: recovering.id, since: Self.longAgo)
            #expect(try await store.countRecovery(recovery) == 3, "a2 (dead), a3 and b1 (verified while disabled)")

            // Enabled again, a5 arrives the usual way: pending, so the recover leaves it alone.
            _ = try await store.setSubscriptionEnabled(id: recovering.id, true, reason: nil)
            try await store.ingest("a5", user: "a")
            try await store.verifyAll()
            #expect(try await store.countRecovery(recovery) == 3)
            #expect(try await store.countRecovery(Recovery(subscriptionID: recovering.id, since: Date().addingTimeInterval(3600))) == 0)
            #expect(try await store.countRecovery(Recovery(subscriptionID: "sub_nope", since: Self.longAgo)) == nil)
            #expect(try await store.startRecovery(Recovery(subscriptionID: "sub_nope", since: Self.longAgo), actor: supportActor,
                                                  reason: "r") == nil)

            let replay = try #require(try await store.startRecovery(recovery, actor: supportActor, reason: "endpoint was down"))
            #expect(replay.kind == .recover && replay.state == .running && replay.matched == 3 && replay.sent == 0)
            #expect(replay.filter == recovery.json)
            #expect(try await store.advanceReplays(limit: 2) == 2)
            #expect(try await store.advanceReplays(limit: 2) == 1)
            #expect(try await store.advanceReplays(limit: 2) == nil, "no replay has work left")

            // Claimed one at a time per user, in sequence order, a5 after the recovered a2 and a3.
            let mine = try await store.deliverAll { tasks in
                let mine = tasks.filter { $0.subscriptionID == recovering.id }
                #expect(Set(mine.map(\.userID)).count == mine.count, "one delivery per user at a time")
            }.filter { $0.subscriptionID == recovering.id }
            for task in mine {
                #expect(task.webhookID == WebhookID.make(eventID: task.eventID, subscriptionID: recovering.id))
                #expect(task.replay?.id == (task.eventID == "a5" ? nil : replay.id))
            }
            #expect(Dictionary(grouping: mine, by: \.userID).mapValues { $0.map(\.sequence) } == ["a": [2, 3, 5], "b": [1]])
            let done = try #require(try await store.replay(id: replay.id))
            #expect(done.state == .completed && done.sent == 3 && done.delivered == 3 && done.failed == 0)

            // Exactly once: a second recover of the same window finds nothing.
            #expect(try await store.countRecovery(recovery) == 0)
            await #expect(throws: ReplayError.nothingToRecover) {
                _ = try await store.startRecovery(recovery, actor: supportActor, reason: "again")
            }
            let audit = try await store.auditEntries(AuditQuery(action: "subscription.recover"))
            #expect(audit.count == 1 && audit.first?.target == replay.id && audit.first?.filter == recovery.json && audit.first?.matched == 3)
        }
    }

    /// A recover started while the subscription is disabled is accepted; its deliveries wait,
    /// as the subscription's other pending ones do, and go in order once it is enabled.
    @Test(arguments: StoreKind.all)
    func aRecoverOfADisabledSubscriptionWaitsUntilItIsEnabled(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe(types: [.tokenRotated])
            _ = try await store.setSubscriptionEnabled(id: subscription.id, false, reason: "off")
            try await store.ingest("e1", user: "a")
            try await store.ingest("e2", user: "a")
            try await store.verifyAll()
            let replay = try #require(try await store.startRecovery(
                Recovery(subscriptionID: subscription.id, since: Self.longAgo), actor: supportActor, reason: "r"))
            #expect(replay.matched == 2)
            #expect(try await store.advanceReplays(limit: 10) == 2)
            #expect(try await store.claimAllDeliveries().isEmpty, "nothing goes to a disabled subscription")
            _ = try await store.setSubscriptionEnabled(id: subscription.id, true, reason: nil)
            #expect(try await store.deliverAll().map(\.sequence) == [1, 2])
        }
    }

    /// `until` bounds the window, and so does the moment the recover started: what arrives
    /// later is delivered the usual way, not by the recover.
    @Test(arguments: StoreKind.all)
    func aRecoverSendsOnlyItsWindow(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe(types: [.tokenRotated])
            _ = try await store.setSubscriptionEnabled(id: subscription.id, false, reason: "off")
            try await store.ingest("e1", user: "a")
            try await Task.sleep(for: .milliseconds(20))
            let between = Date()
            try await Task.sleep(for: .milliseconds(20))
            try await store.ingest("e2", user: "a")
            try await store.verifyAll()
            _ = try await store.setSubscriptionEnabled(id: subscription.id, true, reason: nil)

            #expect(try await store.countRecovery(Recovery(subscriptionID: subscription.id, since: Self.longAgo, until: between)) == 1)
            #expect(try await store.countRecovery(Recovery(subscriptionID: subscription.id, since: between)) == 1)
            let replay = try #require(try await store.startRecovery(
                Recovery(subscriptionID: subscription.id, since: between), actor: supportActor, reason: "r"))
            // Disabled and enabled again after the start: e3 gets no delivery, and is not the
            // recover's either, since it arrived after the recover began.
            _ = try await store.setSubscriptionEnabled(id: subscription.id, false, reason: "off")
            try await store.ingest("e3", user: "a")
            try await store.verifyAll()
            _ = try await store.setSubscriptionEnabled(id: subscription.id, true, reason: nil)
            #expect(try await store.advanceReplays(limit: 10) == 1)
            #expect(try await store.claimAllDeliveries().map(\.eventID) == ["e2"])
            #expect(try await store.replay(id: replay.id)?.sent == 1)
        }
    }
}
