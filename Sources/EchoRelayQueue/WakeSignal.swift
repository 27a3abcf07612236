import Synchronization

/// Wakes idle workers at once when work arrives, instead of at their next poll. A wake with
/// no one waiting is remembered, so a worker that was busy when the work arrived still
/// finds it on its next wait: no wake-up is lost. A wake also says whether the work is
/// where only a claim finds it, or in the worker's inbox, which costs no claim.
public final class WakeSignal: Sendable {
    private struct Waiter {
        let continuation: CheckedContinuation<Void, Never>
        let deadline: ContinuousClock.Instant
    }

    private struct State {
        var pending = false
        var claimRequested = false
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
        var abandoned: Set<Int> = []
        /// When the current timer wakes next; nil when none runs.
        var timerAt: ContinuousClock.Instant?
        /// The current timer's number: an older one ends at its next wake.
        var timerGeneration = 0

        /// Takes the waiters whose deadline has passed.
        mutating func expired(at now: ContinuousClock.Instant) -> [CheckedContinuation<Void, Never>] {
            let due = waiters.filter { $0.value.deadline <= now }
            for id in due.keys { waiters.removeValue(forKey: id) }
            return due.values.map { $0.continuation }
        }
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes every waiter, or the next one to wait if none is waiting now.
    /// - claim: false when the work is in the worker's inbox (`HandOffInbox`) and nowhere else.
    public func wake(claim: Bool = true) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if claim { state.claimRequested = true }
            if state.waiters.isEmpty {
                state.pending = true
                return []
            }
            defer { state.waiters.removeAll() }
            return state.waiters.values.map { $0.continuation }
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether a wake asked for a claim that has not been taken yet.
    public var hasClaimRequest: Bool { state.withLock { $0.claimRequested } }

    /// Whether a wake since the last call asked for a claim; the request is taken.
    public func takeClaimRequest() -> Bool {
        state.withLock { state in
            defer { state.claimRequested = false }
            return state.claimRequested
        }
    }

    /// Returns when woken, after `timeout`, or when the task is cancelled.
    ///
    /// The timeouts share one timer task, which sleeps until the earliest deadline: a worker
    /// woken many times a second starts no timer per wait (each was a task group, two tasks
    /// and a dispatch timer; timers took 5–10% of serve's CPU in perf at 400 events/s), only
    /// about one per timeout.
    public func wait(upTo timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        let id = state.withLock { state -> Int? in
            if state.pending {
                state.pending = false
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let (resumeNow, newTimer) = state.withLock { state -> (Bool, Int?) in
                    if state.abandoned.remove(id) != nil { return (true, nil) }
                    state.waiters[id] = Waiter(continuation: continuation, deadline: deadline)
                    guard state.timerAt.map({ deadline < $0 }) ?? true else { return (false, nil) }
                    state.timerAt = deadline
                    state.timerGeneration += 1
                    return (false, state.timerGeneration)
                }
                if resumeNow { continuation.resume() }
                if let newTimer { Task { await self.runTimer(generation: newTimer, firstAt: deadline) } }
            }
        } onCancel: {
            abandon(id)
        }
    }

    /// Resumes the waiters whose deadline has passed, then sleeps until the next one, while
    /// it is the current timer: one started for an earlier deadline takes over, and this one
    /// ends at its next wake.
    private func runTimer(generation: Int, firstAt first: ContinuousClock.Instant) async {
        var wakeAt = first
        while true {
            try? await Task.sleep(until: wakeAt, clock: .continuous)
            let now = ContinuousClock.now
            let (expired, next) = state.withLock { state -> ([CheckedContinuation<Void, Never>], ContinuousClock.Instant?) in
                let expired = state.expired(at: now)
                guard state.timerGeneration == generation else { return (expired, nil) }
                state.timerAt = state.waiters.values.map { $0.deadline }.min()
                return (expired, state.timerAt)
            }
            for waiter in expired { waiter.resume() }
            guard let next else { return }
            wakeAt = next
        }
    }

    /// Resumes the waiter `id` if it is still waiting; if it has not started waiting yet,
    /// marks it so that it returns as soon as it does.
    private func abandon(_ id: Int) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiters.removeValue(forKey: id) { return waiter.continuation }
            state.abandoned.insert(id)
            return nil
        }
        continuation?.resume()
    }
}
