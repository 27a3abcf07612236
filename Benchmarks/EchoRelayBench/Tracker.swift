import Foundation
import Histogram
import Synchronization

/// What the subscribers received during one offered-rate step: latency from each event's
/// intended send time (so a stalled sender cannot hide a stall: no coordinated omission) to
/// the moment its subscriber answers, plus order and duplicate checks per subscription.
final class Tracker: Sendable {
    struct StepState {
        var step = -1
        var start = ContinuousClock.now
        var interval = Duration.zero
        var latencyMicros = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var delivered = 0
    }

    struct State {
        var current = StepState()
        var acknowledged = 0
        /// Per subscription and user, the last sequence delivered: ordered subscriptions
        /// must never go backwards.
        var lastSequence: [String: Int64] = [:]
        var seen: Set<String> = []
        var outOfOrder = 0
        var duplicates = 0
        var badSignatures = 0
    }

    private let state = Mutex(State())

    /// Starts a step: event n of `step` is meant to leave at `start + n × interval`.
    func begin(step: Int, start: ContinuousClock.Instant, interval: Duration) {
        state.withLock {
            $0.current = StepState(step: step, start: start, interval: interval)
            $0.acknowledged = 0
        }
    }

    func acknowledged() { state.withLock { $0.acknowledged += 1 } }

    func delivered(eventID: String, subscription: Int, user: String, sequence: Int64) {
        let now = ContinuousClock.now
        state.withLock { state in
            if !state.seen.insert("\(subscription)/\(eventID)").inserted {
                state.duplicates += 1
                return
            }
            let key = "\(subscription)/\(user)"
            if let last = state.lastSequence[key], last > sequence { state.outOfOrder += 1 }
            state.lastSequence[key] = max(state.lastSequence[key] ?? 0, sequence)
            // A late delivery of an earlier step counts for order and duplicates only.
            guard let (step, n) = EventIDs.parse(eventID), step == state.current.step else { return }
            let intended = state.current.start + state.current.interval * n
            let micros = max(0, (now - intended).microseconds)
            _ = state.current.latencyMicros.record(UInt64(micros))
            state.current.delivered += 1
        }
    }

    func badSignature() { state.withLock { $0.badSignatures += 1 } }

    /// The counters now. Only these are copied out: a copy of the whole state (the set of
    /// every delivery seen) held by a reader would make the next `delivered` copy it all,
    /// inside the lock, on the subscriber's answer path.
    struct Counts {
        let delivered: Int
        let acknowledged: Int
        let outOfOrder: Int
        let duplicates: Int
        let badSignatures: Int
    }

    var counts: Counts {
        state.withLock {
            Counts(delivered: $0.current.delivered, acknowledged: $0.acknowledged, outOfOrder: $0.outOfOrder,
                   duplicates: $0.duplicates, badSignatures: $0.badSignatures)
        }
    }

    /// The current step's latencies, for its report once it has drained.
    var latencies: Histogram<UInt64> { state.withLock { $0.current.latencyMicros } }
}

/// Event ids that carry their step and index, so a delivery finds its intended send time
/// without a lookup table.
enum EventIDs {
    static func make(run: String, step: Int, n: Int) -> String { "evt_\(run)_\(step)_\(n)" }

    static func parse(_ id: String) -> (step: Int, n: Int)? {
        let parts = id.split(separator: "_")
        guard parts.count == 4, let step = Int(parts[2]), let n = Int(parts[3]) else { return nil }
        return (step, n)
    }
}

extension Duration {
    var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }

    var secondsDouble: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
