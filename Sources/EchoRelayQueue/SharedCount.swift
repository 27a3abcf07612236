import Synchronization

/// A count shared between the claim loop and the tasks it starts.
public final class SharedCount: Sendable {
    public init() {}

    private let count = Mutex(0)
    public var value: Int { count.withLock { $0 } }
    public func add(_ delta: Int) { count.withLock { $0 += delta } }
    /// Adds one and returns the new count.
    public func next() -> Int { count.withLock { $0 += 1; return $0 } }
    public func reset() { count.withLock { $0 = 0 } }
}
