import EchoRelayCore
import Foundation
import Logging

extension DeliveryQueue {
    /// How long after its hand-off a delivery may still be sent from memory: half of what its
    /// lease leaves beyond a webhook's time limit, so that it is answered and recorded well
    /// before the lease ends (22.5 s with the defaults). One sent later could be claimed by
    /// another process, or this one's claim, while its webhook is still out. What waited
    /// longer is forgotten; once its lease lapses, a claim takes it.
    var sendableFor: Duration { (configuration.lease - configuration.timeout) / 2 }

    /// What to send next: first what claims leased ahead, for the slots that have freed
    /// (`claimedAhead`), while the next claim starts beside the loop if one is due
    /// (`startClaim`); then the deliveries handed off to this process — those of a
    /// subscription at its cap wait for one of its deliveries to end (`waitingForSlot`), and
    /// the others go past them. Deliveries of one event go out as a group whose attempts are
    /// written together.
    func nextDeliveries(upTo free: Int) async throws -> [Outgoing] {
        let cap = configuration.perSubscriptionConcurrency
        forgetStaleHandOffs()
        let (ahead, aheadToCheck) = takeLoaded(from: claimedAhead, upTo: free, cap: cap)
        startClaim(free: free - ahead.count - aheadToCheck.count)
        let room = free - ahead.count - aheadToCheck.count
        let (admittedWaiting, waitingToCheck) = takeLoaded(from: waitingForSlot, upTo: room, cap: cap)
        let slotted = aheadToCheck + waitingToCheck
        // `room` already leaves out what was taken from `claimedAhead`.
        let taken = slotted.map { HandedOff($0.item.deliveryID, at: $0.at) }
            + handOffs.take(upTo: room - admittedWaiting.count - waitingToCheck.count)
        let handedOffAt = Dictionary(taken.map { ($0.item, $0.at) }, uniquingKeysWith: min)
        // Loaded again, not kept from before: only leases still this process's come back.
        let loaded = taken.isEmpty ? [] : try await store.leasedDeliveries(ids: taken.map(\.item), owner: owner)
        // Those that waited for a slot first: the room was counted for them.
        let waited = Set(slotted.map(\.item.deliveryID))
        let (handed, overCap) = inFlight.admit(loaded.filter { waited.contains($0.deliveryID) }
                                                 + loaded.filter { !waited.contains($0.deliveryID) }, cap: cap)
        waitingForSlot.add(overCap) { handedOffAt[$0] ?? .now }
        return Outgoing.grouped(ahead + admittedWaiting + handed, linger: configuration.siblingLinger) { records in
            await self.writeAttempts(records)
        }
    }

    /// Takes from `queue` (`claimedAhead` or `waitingForSlot`, both loaded already) what the
    /// slots free now allow: those that waited no more than `loadedFresh`, counted in flight,
    /// to send as they are; the others to load again first and admit, as a hand-off is (their
    /// lease may have been taken back: a subscription deleted, a delivery cancelled).
    func takeLoaded(from queue: SlotQueue, upTo free: Int, cap: Int)
        -> (fresh: [DeliveryTask], toCheck: [HandedOff<DeliveryTask>]) {
        let taken = queue.take(upTo: free) { inFlight.room(for: $0, cap: cap) }
        guard !taken.isEmpty else { return ([], []) }
        let freshSince = ContinuousClock.now - Self.loadedFresh
        let fresh = taken.filter { $0.at >= freshSince }.map(\.item)
        inFlight.started(fresh)
        return (fresh, taken.filter { $0.at < freshSince })
    }

    /// How long a delivery waiting in memory goes without being loaded again, counted from
    /// its claim or hand-off (its load came after). Loading again each one that waited for a
    /// slot, however briefly, loaded 1.35 deliveries for each sent in scripts/bench's step at
    /// 1,418 events/s; past this, it waited behind a slow subscriber, or a backlog.
    static let loadedFresh: Duration = .seconds(1)

    /// Forgets the hand-offs that waited past `sendableFor`, in the inbox or for a slot. Once a
    /// poll interval, not at every call: it reads every waiting hand-off, thousands under a
    /// backlog, and `sendableFor` leaves its margin.
    func forgetStaleHandOffs() {
        guard staleSweep.due(every: configuration.pollInterval) else { return }
        let before = ContinuousClock.now - sendableFor
        let dropped = handOffs.drop(handedOffBefore: before) + waitingForSlot.drop(handedOffBefore: before)
            + claimedAhead.drop(handedOffBefore: before)
        if dropped > 0 {
            logger.notice("handed-off deliveries waited too long to be sent before their lease ends; a claim takes them once it has",
                          metadata: ["deliveries": "\(dropped)", "waited.over": "\(DurationText.format(sendableFor))"])
        }
    }
}
