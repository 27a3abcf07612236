import EchoRelayCore
import Synchronization

/// Webhooks in flight per subscription, so that handed-off deliveries keep the cap a claim
/// keeps in the database.
final class SubscriptionLoad: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    /// Counts in those `tasks` that keep their subscription within `cap`, and returns the rest.
    func admit(_ tasks: [DeliveryTask], cap: Int) -> (admitted: [DeliveryTask], waiting: [DeliveryTask]) {
        counts.withLock { counts in
            var admitted: [DeliveryTask] = [], waiting: [DeliveryTask] = []
            for task in tasks {
                if counts[task.subscriptionID, default: 0] < cap {
                    counts[task.subscriptionID, default: 0] += 1
                    admitted.append(task)
                } else {
                    waiting.append(task)
                }
            }
            return (admitted, waiting)
        }
    }

    func started(_ tasks: [DeliveryTask]) {
        counts.withLock { counts in
            for task in tasks { counts[task.subscriptionID, default: 0] += 1 }
        }
    }

    /// How many more webhooks `subscriptionID` may have in flight under `cap`.
    func room(for subscriptionID: String, cap: Int) -> Int {
        counts.withLock { max(cap - $0[subscriptionID, default: 0], 0) }
    }

    func finished(_ subscriptionID: String) {
        counts.withLock { counts in
            let left = counts[subscriptionID, default: 1] - 1
            counts[subscriptionID] = left > 0 ? left : nil
        }
    }
}

/// Handed-off deliveries waiting for a slot of their subscription, by subscription, each
/// subscription's oldest first. Ids only: a delivery is loaded again when it goes, so that one
/// whose lease lapsed meanwhile (and that another process may have claimed) is not sent.
final class SlotQueue: Sendable {
    private struct Waiting {
        var ids: [String: [Int64]] = [:]
        /// Subscriptions in the order they first had a delivery waiting, so that none is
        /// passed over for good when slots are few.
        var order: [String] = []
    }

    private let state = Mutex(Waiting())

    /// A subscription's list is removed once empty, so no ids means nothing waits.
    var isEmpty: Bool { state.withLock { $0.ids.isEmpty } }

    func add(_ tasks: [DeliveryTask]) {
        guard !tasks.isEmpty else { return }
        state.withLock { state in
            for task in tasks {
                if state.ids[task.subscriptionID] == nil { state.order.append(task.subscriptionID) }
                state.ids[task.subscriptionID, default: []].append(task.deliveryID)
            }
        }
    }

    /// Takes up to `limit` ids, at most `room(subscription)` of each subscription's.
    func take(upTo limit: Int, room: (String) -> Int) -> [Int64] {
        guard limit > 0 else { return [] }
        return state.withLock { state in
            var taken: [Int64] = []
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
}
