import EchoRelayCore
import Synchronization

/// An item handed off, and when: its lease began then (give or take its write's commit).
public struct HandedOff<Item: Sendable>: Sendable {
    public let item: Item
    public let at: ContinuousClock.Instant

    public init(_ item: Item, at: ContinuousClock.Instant) {
        self.item = item
        self.at = at
    }
}

/// Work handed to a worker of this process as it is written, leased to it already, so the
/// worker starts on it without a claim: events an ingest stored (their tasks), deliveries a
/// verification outcome or an ended delivery made due (their ids). Only work whose lease is
/// in the database waits here, so a process that dies with work here loses nothing.
public final class HandOffInbox<Item: Sendable>: Sendable {
    private let waiting = Mutex<[HandedOff<Item>]>([])
    private let handOff: HandOff
    private let capacity: Int?

    /// - capacity: the most items waiting before writers stop handing off (and leave the work
    ///   to the claim); nil for no limit, where the worker forgets what waited too long
    ///   instead (`drop(handedOffBefore:)`).
    public init(handOff: HandOff, capacity: Int?) {
        self.handOff = handOff
        self.capacity = capacity
    }

    /// The hand-off a write of `count` items asks for now, or nil while there is no room.
    public func request(count: Int = 1) -> HandOff? {
        guard let capacity else { return handOff }
        return waiting.withLock { $0.count } + count <= capacity ? handOff : nil
    }

    public var isEmpty: Bool { waiting.withLock { $0.isEmpty } }

    /// The items waiting here now.
    public var items: [Item] { waiting.withLock { $0.map(\.item) } }

    /// Items just handed off; `first`: before those waiting (older work, such as the next
    /// delivery of a queue whose head just ended).
    public func add(_ items: [Item], first: Bool = false) {
        guard !items.isEmpty else { return }
        let now = ContinuousClock.now
        waiting.withLock { waiting in
            let handed = items.map { HandedOff($0, at: now) }
            if first { waiting.insert(contentsOf: handed, at: 0) } else { waiting += handed }
        }
    }

    /// Takes up to `limit` items, oldest first (none for a limit below one).
    public func take(upTo limit: Int) -> [HandedOff<Item>] {
        guard limit > 0 else { return [] }
        return waiting.withLock { waiting in
            let taken = Array(waiting.prefix(limit))
            waiting.removeFirst(taken.count)
            return taken
        }
    }

    /// Forgets the items handed off before `instant`, and returns how many: their leases run
    /// out in the database, and then a claim takes them.
    public func drop(handedOffBefore instant: ContinuousClock.Instant) -> Int {
        waiting.withLock { waiting in
            let before = waiting.count
            waiting.removeAll { $0.at < instant }
            return before - waiting.count
        }
    }
}

/// Events an ingest handed to this process's verify worker.
public typealias VerificationInbox = HandOffInbox<VerificationTask>
/// Ids of deliveries handed to this process's delivery worker, to load and send.
public typealias DeliveryInbox = HandOffInbox<Int64>
