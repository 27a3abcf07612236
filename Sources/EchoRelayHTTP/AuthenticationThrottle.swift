import Synchronization

/// Failed authentications counted per client address, in fixed one-minute windows. Past
/// `limit` failures in a window, that address is refused (`429`) until the window ends, before
/// its credential is looked at, so guessing a token runs at `limit` tries a minute.
///
/// It holds at most `capacity` addresses: when full, ended windows go first, then an
/// arbitrary one. Callers pass the time in, so tests can step it.
public final class AuthenticationThrottle: Sendable {
    /// `ECHORELAY_AUTH_FAILURE_LIMIT`'s default.
    public static let defaultLimit = 20
    public static let window: Duration = .seconds(60)

    public let limit: Int
    private let capacity: Int
    private struct Window { var start: ContinuousClock.Instant; var failures: Int }
    private let windows = Mutex<[String: Window]>([:])

    public init(limit: Int = defaultLimit, capacity: Int = 10_000) {
        precondition(limit > 0 && capacity > 0)
        self.limit = limit
        self.capacity = capacity
    }

    /// How long `address` must wait before it may try again; nil when it may try now.
    func refusal(for address: String, now: ContinuousClock.Instant = .now) -> Duration? {
        windows.withLock { windows in
            guard let window = windows[address], now < window.start + Self.window, window.failures >= limit else { return nil }
            return window.start + Self.window - now
        }
    }

    /// Counts a failed authentication from `address`.
    func recordFailure(from address: String, now: ContinuousClock.Instant = .now) {
        windows.withLock { windows in
            if var window = windows[address], now < window.start + Self.window {
                window.failures += 1
                windows[address] = window
                return
            }
            if windows[address] == nil, windows.count >= capacity {
                windows = windows.filter { now < $0.value.start + Self.window }
                if windows.count >= capacity { windows.remove(at: windows.startIndex) }
            }
            windows[address] = Window(start: now, failures: 1)
        }
    }
}
