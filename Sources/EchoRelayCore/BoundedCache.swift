import Synchronization

/// A small map of recent results shared by concurrent tasks, for values that are dear to
/// compute and the same every time for one key (a delivery body, an opened secret) or true
/// for a little while (a host's address check).
///
/// It never holds more than `capacity` entries: when full, expired entries go first, then an
/// arbitrary one. Callers pass the time in, so tests can step it.
public final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        var value: Value
        /// When the entry stops counting; nil for never.
        var expires: ContinuousClock.Instant?
    }

    public let capacity: Int
    private let entries: Mutex<[Key: Entry]>

    public init(capacity: Int) {
        precondition(capacity > 0, "a cache holds at least one entry")
        self.capacity = capacity
        self.entries = Mutex([:])
    }

    /// The value stored for `key`, unless it had expired by `now`.
    public func value(for key: Key, now: ContinuousClock.Instant? = nil) -> Value? {
        entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            if let expires = entry.expires, let now, now >= expires { return nil }
            return entry.value
        }
    }

    /// Stores `value` for `key` until `expires` (nil: until it is pushed out).
    public func set(_ value: Value, for key: Key, expires: ContinuousClock.Instant? = nil, now: ContinuousClock.Instant? = nil) {
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= capacity {
                if let now { entries = entries.filter { $0.value.expires.map { now < $0 } ?? true } }
                if entries.count >= capacity { entries.remove(at: entries.startIndex) }
            }
            entries[key] = Entry(value: value, expires: expires)
        }
    }

    /// The value for `key`, made and stored on first use. Two tasks missing at once may both
    /// make it; they make the same value.
    public func value<Failure: Error>(for key: Key, orMake make: () throws(Failure) -> Value) throws(Failure) -> Value {
        if let value = value(for: key) { return value }
        let value = try make()
        set(value, for: key)
        return value
    }

    public var count: Int { entries.withLock { $0.count } }
}
