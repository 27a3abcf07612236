import Synchronization

/// Asks an ingest to lease the verification work it writes to this process: `owner` is the
/// process's verify worker, `lease` how long it holds the items.
public struct VerificationHandOff: Sendable, Equatable {
    public var owner: String
    public var lease: Duration

    public init(owner: String, lease: Duration) {
        self.owner = owner
        self.lease = lease
    }
}

/// Events handed to this process's verify worker as they are stored: an ingest in the same
/// process writes their work items leased to the worker and puts the tasks here, so the
/// worker starts on them without a claim. The lease is in the database: a process that dies
/// with tasks here loses nothing (the leases lapse and any process claims the items).
public final class VerificationInbox: Sendable {
    private let waiting = Mutex<[VerificationTask]>([])
    private let handOff: VerificationHandOff
    private let capacity: Int

    /// - capacity: the most tasks waiting before ingest stops handing off (and leaves the
    ///   items to the claim), so that nothing waits here long enough for its lease to lapse.
    public init(handOff: VerificationHandOff, capacity: Int) {
        self.handOff = handOff
        self.capacity = capacity
    }

    /// The hand-off an ingest of `count` events asks for now, or nil while there is no room.
    public func request(count: Int) -> VerificationHandOff? {
        waiting.withLock { $0.count } + count <= capacity ? handOff : nil
    }

    public func add(_ tasks: [VerificationTask]) {
        guard !tasks.isEmpty else { return }
        waiting.withLock { $0 += tasks }
    }

    /// Takes up to `limit` tasks, oldest first.
    public func take(upTo limit: Int) -> [VerificationTask] {
        waiting.withLock { waiting in
            let taken = Array(waiting.prefix(limit))
            waiting.removeFirst(taken.count)
            return taken
        }
    }
}
