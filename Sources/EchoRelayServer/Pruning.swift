import EchoRelayCore
import Foundation

/// Runs retention's walks to their end: events first (which takes their attempts along),
/// then attempt records, then test deliveries. Used by the background pruner and by
/// `echorelay prune`.
public struct Pruning: Sendable {
    public let store: any RetentionStore
    public let policy: RetentionPolicy
    public let batchSize: Int
    /// Between batches, at least, so that pruning stays in the background of the hot path;
    /// after a batch that took longer, three times as long as it took: pruning holds at most
    /// a quarter of one connection's time however slow the database is.
    public let pause: Duration

    public init(store: any RetentionStore, policy: RetentionPolicy, batchSize: Int = 500, pause: Duration = .milliseconds(20)) {
        self.store = store
        self.policy = policy
        self.batchSize = batchSize
        self.pause = pause
    }

    public func run(dryRun: Bool, now: Date = Date()) async throws -> PruneCounts {
        var total = PruneCounts()
        let eventsCutoff = policy.events.map { now.addingTimeInterval(-$0.seconds) }
        if let eventsCutoff {
            total += try await walk { try await store.pruneEvents(finalBefore: eventsCutoff, after: $0, limit: batchSize, dryRun: dryRun) }
        }
        if let attempts = policy.attempts {
            let cutoff = now.addingTimeInterval(-attempts.seconds)
            let sparing = dryRun ? eventsCutoff : nil
            total += try await walk {
                try await store.pruneAttempts(finalBefore: cutoff, sparing: sparing, after: $0, limit: batchSize, dryRun: dryRun)
            }
            while true {
                let removed = try await store.pruneTestDeliveries(before: cutoff, limit: batchSize, dryRun: dryRun)
                total.testDeliveries += removed
                if dryRun || removed < batchSize { break }
                try await rest(after: .zero)
            }
        }
        return total
    }

    private func rest(after batch: Duration) async throws {
        let wait = pause == .zero ? .zero : max(pause, batch * 3)
        if wait > .zero { try await Task.sleep(for: wait) }
    }

    private func walk(_ step: (Int64) async throws -> PruneStep) async throws -> PruneCounts {
        var total = PruneCounts()
        var cursor: Int64 = 0
        let clock = ContinuousClock()
        while true {
            let started = clock.now
            let batch = try await step(cursor)
            total += batch.removed
            if batch.done || batch.cursor <= cursor { return total }
            cursor = batch.cursor
            try await rest(after: clock.now - started)
        }
    }
}
