import Foundation
import Synchronization

/// Ingest's admission by backlog (`ECHORELAY_BACKLOG_LIMIT`). One sampler per process reads
/// the backlog from the database now and then; between readings, this process counts the
/// events it lets in on top of the last reading, so one process alone never passes the
/// limit by more than what is in flight, and an ingest reads numbers in memory rather than
/// counting rows. Several ingest processes may together pass it by what the others let in
/// between two readings.
///
/// Closed while the backlog is at the limit (one more would pass it); open again as soon as
/// it is below. It also estimates how fast the backlog drains, for the `Retry-After` of a
/// refusal.
public final class BacklogLimit: Sendable {
    public let limit: Int
    private let state: Mutex<State>

    struct State {
        var backlog = 0
        /// The last reading said the gate is closed (reported once per change).
        var closed = false
        /// Events let in so far, and how many of them the last reading already counted.
        var admitted = 0
        var admittedBeforeReading = 0
        var last: (sample: BacklogSample, at: ContinuousClock.Instant)?
        var drain = DrainRate()

        var admittedSinceReading: Int { admitted - admittedBeforeReading }
    }

    /// What a reading changed: ingest closed or opened again.
    public enum Change: Sendable, Equatable {
        case closed(backlog: Int, retryAfter: Int)
        case opened(backlog: Int)
    }

    public init(limit: Int) {
        precondition(limit > 0, "a backlog limit is positive")
        self.limit = limit
        state = Mutex(State())
    }

    /// How many events a reading counts at most: twice the limit, so a reading stays exact
    /// past the limit (the excess and the drain rate of a closed gate stay measurable) and
    /// its cost is bounded by the limit, not by the backlog.
    public var countCap: Int { limit * 2 }

    /// The last reading.
    public var backlog: Int { state.withLock { $0.backlog } }

    /// Completions per second, smoothed; nil until the backlog has been seen draining.
    public var drainPerSecond: Double? { state.withLock { $0.drain.perSecond } }

    /// Lets one event in, or refuses it with the seconds the provider should wait. A request
    /// let in may still fail or be a retry: it counts until the next reading, which is safe.
    public func admit() -> Int? {
        state.withLock { state in
            let backlog = state.backlog + state.admittedSinceReading
            guard backlog >= limit else {
                state.admitted += 1
                return nil
            }
            return Self.retryAfter(backlog: backlog, limit: limit, drainPerSecond: state.drain.perSecond)
        }
    }

    /// Called as a reading starts: the events let in before it are in its count once they
    /// have committed, which they all but always have by the time it runs.
    public func readingStarts() -> Int {
        state.withLock { $0.admitted }
    }

    /// Takes a reading that started when `readingStarts()` returned `admittedBefore`; returns
    /// the change, if the gate closed or opened.
    public func record(_ sample: BacklogSample, admittedBefore: Int, at now: ContinuousClock.Instant = .now) -> Change? {
        state.withLock { state in
            if let last = state.last, last.sample.count < countCap, sample.count < countCap,
               last.sample.count > 0, sample.count > 0, now > last.at, sample.arrivals >= last.sample.arrivals {
                // What left = what was there + what arrived − what is there now. Only exact
                // readings of a non-empty backlog say how fast it drains: an empty one drains
                // only as fast as events arrive.
                let drained = Int64(last.sample.count) + (sample.arrivals - last.sample.arrivals) - Int64(sample.count)
                state.drain.add(drained: drained, over: now - last.at)
            }
            state.last = (sample, now)
            state.backlog = sample.count
            state.admittedBeforeReading = max(state.admittedBeforeReading, min(admittedBefore, state.admitted))
            let closed = sample.count >= limit
            defer { state.closed = closed }
            switch (state.closed, closed) {
            case (false, true):
                return .closed(backlog: sample.count, retryAfter: Self.retryAfter(backlog: sample.count, limit: limit, drainPerSecond: state.drain.perSecond))
            case (true, false):
                return .opened(backlog: sample.count)
            default:
                return nil
            }
        }
    }

    public static let retryAfterRange = 1...60

    /// The time for the backlog to drain below the limit at the current rate, in whole
    /// seconds within `retryAfterRange`; the longest when it is not draining.
    public static func retryAfter(backlog: Int, limit: Int, drainPerSecond: Double?) -> Int {
        let excess = Double(max(backlog - limit + 1, 0))  // what must finish before one more fits
        guard let rate = drainPerSecond, rate > 0 else { return retryAfterRange.upperBound }
        let seconds = (excess / rate).rounded(.up)
        return Int(min(max(seconds, Double(retryAfterRange.lowerBound)), Double(retryAfterRange.upperBound)))
    }
}

/// Events drained per second, smoothed exponentially over time: each measurement weighs by
/// the time it covers, so the estimate does not depend on how often readings come.
public struct DrainRate: Sendable, Equatable {
    /// After this long, a measurement weighs half as much.
    public var halfLife: Duration
    public private(set) var perSecond: Double?

    public init(halfLife: Duration = .seconds(5)) {
        self.halfLife = halfLife
    }

    /// `drained` events finished over `interval`. A negative count (a reading that saw an
    /// arrival's number before its commit) is averaged in like any other: the next reading
    /// makes up for it.
    public mutating func add(drained: Int64, over interval: Duration) {
        let seconds = interval / .seconds(1)
        guard seconds > 0 else { return }
        let measured = Double(drained) / seconds
        guard let previous = perSecond else {
            perSecond = max(measured, 0)
            return
        }
        let weight = 1 - exp2(-seconds / (halfLife / .seconds(1)))
        perSecond = max(previous + weight * (measured - previous), 0)
    }
}
