import EchoRelayCore
import Foundation
import Logging

extension DeliveryQueue {
    /// Starts a claim beside the loop when one is due and none is running: when a wake asked
    /// for one (work made due that nobody was handed, another process's notice), or the last
    /// claim found something, or a poll interval has passed. A claim, when one is due, goes
    /// before the inbox: what only a claim finds (a queue's head that an outcome or the sweeper
    /// unparked, retries come due, other processes' work) is older than what waits there, so
    /// what it leases waits in `claimedAhead`, which the loop serves first. Hand-offs waiting
    /// in memory hold a lease but no slot, so the claim's cap does not count them, as it does
    /// not count answered webhooks: else under a backlog the claim found every slot taken by
    /// them, and what only it finds waited until the flow of hand-offs stopped (run S's
    /// overload: 15.7 s after verification at the median for those, milliseconds for the rest).
    func startClaim(free: Int) {
        guard !claimRunner.isRunning else { return }
        // While hand-offs wait in memory, slots are seldom short of work, and under the overload
        // benchmark most claims found nothing (0.3 deliveries a claim, 30 claims a second,
        // 4% of the database's time): claims are spaced then.
        let spacing = handOffs.isEmpty && waitingForSlot.isEmpty ? .zero : Self.claimSpacingBehindHandOffs
        let limit = claimLimit(free: free)
        guard claims.due(room: limit, every: configuration.pollInterval, asked: wake.takeClaimRequest(),
                         spacing: spacing) else { return }
        // Read now, before this turn takes hand-offs from the inbox: one taken and not yet
        // admitted or waiting for a slot would be in neither list, and count as a slot taken.
        let holdingNoSlot = answered.all + handOffs.items + waitingForSlot.ids
        claimRunner.start { [self] in
            do {
                let claimed = try await unlessStopped(stopping) { [self] in
                    try await store.claimDeliveries(owner: owner, limit: limit, lease: configuration.lease, perSubscriptionCap: claimCap,
                                                    answered: holdingNoSlot)
                }
                claims.ended(found: claimed.count, room: limit)
                claimFailures.reset()
                claimedAhead.add(claimed) { _ in .now }
                // The loop looks again: at what was claimed, or at an ask that came meanwhile.
                if !claimed.isEmpty || wake.hasClaimRequest { wake.wake(claim: false) }
            } catch is CancellationError where stopping.isSet {
                return
            } catch {
                claims.failed()
                logger.error("claiming deliveries failed", metadata: ["error": "\(error)"])
                // Then the loop looks again, and claims (the failure counts as an ask).
                try? await Task.sleep(for: backOff(after: claimFailures.next(), upTo: configuration.pollInterval))
                wake.wake(claim: false)
            }
        }
    }

    /// The least time between claims while hand-offs wait in memory: what only a claim finds
    /// then waits until the loop looks after it (the next answered webhook, or the poll),
    /// behind hand-offs that have waited longer.
    static let claimSpacingBehindHandOffs: Duration = .milliseconds(100)

    /// The cap a claim keeps per subscription in the database: the webhooks in flight, and
    /// three times as many leased ahead, waiting in `claimedAhead` for a slot. With no more
    /// than the cap, a slot that freed waited for a claim's round trip, about twice a webhook
    /// to a fast subscriber, and a worker fed by claims finished 0.6× what pgbench did running
    /// the same claim and finish (`scripts/bench`'s claim part). Claims follow one another,
    /// each about 3 ms from start to rows under that benchmark, while a subscription's 8 slots
    /// (the default then) sent a webhook each 1.1 ms: about 20 a claim. Twice the cap gave
    /// 0.8×, three times 0.78–0.95×, four times 0.85–0.86× (BENCHMARKS.md, runs W to Y).
    public static let claimCapPerSlot = 4
    var claimCap: Int { Self.claimCapPerSlot * configuration.perSubscriptionConcurrency }

    /// How many deliveries a claim may lease: the loop's free slots and what `claimedAhead`
    /// has room for, the same multiple of the worker's slots as `claimCap` is of a
    /// subscription's. With only the free slots, a claim leased about 25 where the caps allowed
    /// up to 128, however many were due; claims follow one another, so that bounded the rate:
    /// the claim benchmark's worker finished 0.59–0.60× what pgbench did, and 0.75–0.85× with
    /// this in five runs (BENCHMARKS.md, run AA).
    func claimLimit(free: Int) -> Int {
        let ahead = (Self.claimCapPerSlot - 1) * configuration.concurrency
        return max(0, free) + max(0, ahead - claimedAhead.count)
    }
}
