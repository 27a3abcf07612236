import Synchronization

/// A flag set once, from any task, that tells the work registered with it when it is set.
public final class StopFlag: Sendable {
    public init() {}

    private struct State {
        var isSet = false
        var handlers: [Int: @Sendable () -> Void] = [:]
        var nextKey = 0
    }

    private let state = Mutex(State())

    public var isSet: Bool { state.withLock { $0.isSet } }

    public func set() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.isSet else { return [] }
            state.isSet = true
            defer { state.handlers = [:] }
            return Array(state.handlers.values)
        }
        for handler in handlers { handler() }
    }

    /// Calls `handler` once when the flag is set, at once if it is set already; the key
    /// returned is for `forget`.
    public func onSet(_ handler: @escaping @Sendable () -> Void) -> Int? {
        let key = state.withLock { state -> Int? in
            guard !state.isSet else { return nil }
            state.nextKey += 1
            state.handlers[state.nextKey] = handler
            return state.nextKey
        }
        if key == nil { handler() }
        return key
    }

    public func forget(_ key: Int?) {
        guard let key else { return }
        _ = state.withLock { $0.handlers.removeValue(forKey: key) }
    }
}
