import Synchronization

/// A set of delivery ids shared between tasks.
final class DeliveryIDs: Sendable {
    private let ids = Mutex<Set<Int64>>([])

    var all: [Int64] { ids.withLock { Array($0) } }
    func insert(_ id: Int64) { _ = ids.withLock { $0.insert(id) } }
    func remove(_ id: Int64) { _ = ids.withLock { $0.remove(id) } }
}
