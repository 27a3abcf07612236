import EchoRelayCore
import EchoRelayServer
import Foundation
import TestSupport
import Testing

/// A running bulk replay keeps what it still has to send: pruning leaves the events (and
/// their deliveries) alone while a replay or recover is still creating deliveries, and
/// prunes them once it has.
@Suite struct ReplayPruningConformanceTests {
    static let later = Date().addingTimeInterval(3600)

    @Test(arguments: StoreKind.all)
    func aRunningReplaySendsEverythingItCountedThoughPruningRunsMeanwhile(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            _ = try await store.subscribe()
            for (id, user) in [("r1", "a"), ("r2", "a"), ("r3", "b"), ("r4", "b")] { try await store.ingest(id, user: user) }
            try await store.verifyAll { _ in VerificationOutcome(status: .verified, reason: .providerConfirmed) }
            try await Self.deliverEverything(store)

            let replay = try await store.startReplay(ReplayFilter(), actor: supportActor, reason: "subscriber restored from backup")
            #expect(replay.matched == 4)
            #expect(try await store.advanceReplays(limit: 1) == 1, "one delivery made; three still to make")

            // Every event is final, and older than the retention at `later`: only the running
            // replay stands in the way.
            let pruning = Pruning(store: store, policy: RetentionPolicy(attempts: .seconds(60), events: .seconds(60)), batchSize: 2, pause: .zero)
            #expect(try await pruning.run(dryRun: false, now: Self.later).events == 0, "nothing pruned under a running replay")

            while let made = try await store.advanceReplays(limit: 10), made > 0 {}
            let finished = try #require(try await store.replay(id: replay.id))
            #expect(finished.sent == finished.matched, "sent \(finished.sent) of the \(finished.matched) it counted")

            // Once it has made every delivery (and they are final), pruning goes on.
            try await Self.deliverEverything(store)
            #expect(try await pruning.run(dryRun: false, now: Self.later).events == 4)
        }
    }

    /// Claims and delivers until nothing is pending (an ordered subscription hands out one of
    /// a user's deliveries at a time).
    static func deliverEverything(_ store: any EchoRelayStore) async throws {
        while case let tasks = try await store.claimAllDeliveries(), !tasks.isEmpty {
            for task in tasks { try await store.finish(task) }
        }
    }
}
