import Synchronization

/// Says yes at most once per interval, for work that need not run at every call.
public final class Pace: Sendable {
    public init() {}

    private let next = Mutex<ContinuousClock.Instant?>(nil)

    public func due(every interval: Duration) -> Bool {
        let now = ContinuousClock.now
        return next.withLock { next in
            if let due = next, now < due { return false }
            next = now + interval
            return true
        }
    }
}
