import Synchronization

/// Asks a write that makes work due to lease it to this process as it writes it: `owner` is
/// this process's worker, `lease` how long it holds the work. The lease is durable: if the
/// process dies before doing the work, the lease lapses and any process claims it.
public struct HandOff: Sendable, Equatable {
    public var owner: String
    public var lease: Duration

    public init(owner: String, lease: Duration) {
        self.owner = owner
        self.lease = lease
    }
}

/// Work handed to a worker of this process as it is written, leased to it already, so the
/// worker starts on it without a claim: events an ingest stored (their tasks), deliveries a
/// verification outcome or an ended delivery made due (their ids). Only work whose lease is
/// in the database waits here, so a process that dies with work here loses nothing.
public final class HandOffInbox<Item: Sendable>: Sendable {
    private let waiting = Mutex<[Item]>([])
    /// Items taken that wait elsewhere for their turn (`hold`): they still count toward the
    /// capacity, as their leases still run.
    private let held = Mutex(0)
    private let handOff: HandOff
    private let capacity: Int

    /// - capacity: the most items waiting before writers stop handing off (and leave the work
    ///   to the claim), so that nothing waits here long enough for its lease to lapse.
    public init(handOff: HandOff, capacity: Int) {
        self.handOff = handOff
        self.capacity = capacity
    }

    /// The hand-off a write of `count` items asks for now, or nil while there is no room.
    public func request(count: Int = 1) -> HandOff? {
        waiting.withLock { $0.count } + held.withLock { $0 } + count <= capacity ? handOff : nil
    }

    /// `count` items taken from here wait elsewhere before they start: they count toward the
    /// capacity until `release`d.
    public func hold(_ count: Int) {
        held.withLock { $0 += count }
    }

    /// `count` held items started (or were dropped).
    public func release(_ count: Int) {
        held.withLock { $0 = max($0 - count, 0) }
    }

    public var isEmpty: Bool { waiting.withLock { $0.isEmpty } }

    public func add(_ items: [Item]) {
        guard !items.isEmpty else { return }
        waiting.withLock { $0 += items }
    }

    /// Takes up to `limit` items, oldest first.
    public func take(upTo limit: Int) -> [Item] {
        waiting.withLock { waiting in
            let taken = Array(waiting.prefix(limit))
            waiting.removeFirst(taken.count)
            return taken
        }
    }
}

/// Events an ingest handed to this process's verify worker.
public typealias VerificationInbox = HandOffInbox<VerificationTask>
/// Ids of deliveries handed to this process's delivery worker, to load and send.
public typealias DeliveryInbox = HandOffInbox<Int64>
