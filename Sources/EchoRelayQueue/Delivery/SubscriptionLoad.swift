import EchoRelayCore
import Synchronization

/// Webhooks in flight per subscription, so that handed-off deliveries keep the cap a claim
/// keeps in the database.
public final class SubscriptionLoad: Sendable {
    public init() {}

    private let counts = Mutex<[String: Int]>([:])

    /// Counts in those `tasks` that keep their subscription within `cap`, and returns the rest.
    public func admit(_ tasks: [DeliveryTask], cap: Int) -> (admitted: [DeliveryTask], waiting: [DeliveryTask]) {
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

    public func started(_ tasks: [DeliveryTask]) {
        counts.withLock { counts in
            for task in tasks { counts[task.subscriptionID, default: 0] += 1 }
        }
    }

    /// How many more webhooks `subscriptionID` may have in flight under `cap`.
    public func room(for subscriptionID: String, cap: Int) -> Int {
        counts.withLock { max(cap - $0[subscriptionID, default: 0], 0) }
    }

    public func finished(_ subscriptionID: String) {
        counts.withLock { counts in
            let left = counts[subscriptionID, default: 1] - 1
            counts[subscriptionID] = left > 0 ? left : nil
        }
    }
}
