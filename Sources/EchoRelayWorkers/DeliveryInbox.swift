import EchoRelayCore
import Synchronization

/// Deliveries handed to this process's delivery worker as they are written: a verification
/// outcome writes the new queue heads leased to this process, and an attempt that ends a
/// delivery leases the next one of its queue (`DeliveryHandOff`). Their ids wait here until
/// the worker loads and sends them, with no claim. Only ids are held: the lease is in the
/// database, so a process that dies with ids here loses nothing (the leases lapse and any
/// process claims the deliveries, same webhook-id).
public final class DeliveryInbox: Sendable {
    private let waiting = Mutex<[Int64]>([])
    private let handOff: DeliveryHandOff
    private let capacity: Int

    /// - capacity: the most ids waiting before writers stop handing off (and leave the
    ///   deliveries to the claim), so that nothing waits here long enough for its lease to lapse.
    public init(handOff: DeliveryHandOff, capacity: Int) {
        self.handOff = handOff
        self.capacity = capacity
    }

    /// The hand-off a writer asks for now, or nil while the inbox is full.
    public func request() -> DeliveryHandOff? {
        waiting.withLock { $0.count } < capacity ? handOff : nil
    }

    func add(_ ids: [Int64]) {
        guard !ids.isEmpty else { return }
        waiting.withLock { $0 += ids }
    }

    /// Puts back ids taken but not started (their subscription at its cap), to go first next time.
    func putBack(_ ids: [Int64]) {
        guard !ids.isEmpty else { return }
        waiting.withLock { $0.insert(contentsOf: ids, at: 0) }
    }

    /// Takes up to `limit` ids, oldest first.
    func take(upTo limit: Int) -> [Int64] {
        waiting.withLock { waiting in
            let taken = Array(waiting.prefix(limit))
            waiting.removeFirst(taken.count)
            return taken
        }
    }
}
