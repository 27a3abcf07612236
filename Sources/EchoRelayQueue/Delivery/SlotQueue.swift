import EchoRelayCore
import Synchronization

/// Leased deliveries waiting for a slot of their subscription, by subscription, each
/// subscription's oldest delivery (lowest id) first: the next delivery of a queue whose head
/// ended goes before deliveries made after it, so that a user's queue does not wait for the
/// whole backlog at each step.
public final class SlotQueue: Sendable {
    public init() {}

    private struct Waiting {
        var ids: [String: [HandedOff<DeliveryTask>]] = [:]
        /// Subscriptions in the order they first had a delivery waiting, so that none is
        /// passed over for good when slots are few.
        var order: [String] = []
    }

    private let state = Mutex(Waiting())

    /// A subscription's list is removed once empty, so no ids means nothing waits.
    public var isEmpty: Bool { state.withLock { $0.ids.isEmpty } }

    /// How many deliveries wait.
    public var count: Int { state.withLock { $0.ids.values.reduce(0) { $0 + $1.count } } }

    /// Every delivery waiting.
    public var ids: [Int64] { state.withLock { $0.ids.values.flatMap { $0.map(\.item.deliveryID) } } }

    /// Deliveries to wait, each with when it was handed off.
    public func add(_ tasks: [DeliveryTask], handedOffAt: (Int64) -> ContinuousClock.Instant) {
        guard !tasks.isEmpty else { return }
        state.withLock { state in
            for task in tasks {
                if state.ids[task.subscriptionID] == nil { state.order.append(task.subscriptionID) }
                let waiting = HandedOff(task, at: handedOffAt(task.deliveryID))
                let list = state.ids[task.subscriptionID, default: []]
                state.ids[task.subscriptionID, default: []].insert(
                    waiting, at: list.firstIndex { $0.item.deliveryID > task.deliveryID } ?? list.count)
            }
        }
    }

    /// Takes up to `limit` deliveries, at most `room(subscription)` of each subscription's.
    public func take(upTo limit: Int, room: (String) -> Int) -> [HandedOff<DeliveryTask>] {
        guard limit > 0 else { return [] }
        return state.withLock { state in
            var taken: [HandedOff<DeliveryTask>] = []
            for subscription in state.order where taken.count < limit {
                let count = min(room(subscription), limit - taken.count, state.ids[subscription]?.count ?? 0)
                guard count > 0 else { continue }
                taken += state.ids[subscription]!.prefix(count)
                state.ids[subscription]!.removeFirst(count)
                if state.ids[subscription]!.isEmpty { state.ids[subscription] = nil }
            }
            state.order.removeAll { state.ids[$0] == nil }
            return taken
        }
    }

    /// Forgets the deliveries that began waiting before `instant` (a long time, behind a slow
    /// subscriber), and returns how many.
    public func drop(handedOffBefore instant: ContinuousClock.Instant) -> Int {
        state.withLock { state in
            var dropped = 0
            for (subscription, waiting) in state.ids where waiting.contains(where: { $0.at < instant }) {
                let kept = waiting.filter { $0.at >= instant }
                dropped += waiting.count - kept.count
                state.ids[subscription] = kept.isEmpty ? nil : kept
            }
            state.order.removeAll { state.ids[$0] == nil }
            return dropped
        }
    }
}
