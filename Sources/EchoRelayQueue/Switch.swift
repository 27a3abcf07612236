import Synchronization

/// A flag turned on and off from any task.
public final class Switch: Sendable {
    public init() {}

    private let state = Mutex(false)
    public var isOn: Bool {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
