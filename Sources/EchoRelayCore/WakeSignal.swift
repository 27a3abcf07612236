import Synchronization

/// Wakes idle workers at once when work arrives, instead of at their next poll. A wake with
/// no one waiting is remembered, so a worker that was busy when the work arrived still
/// finds it on its next wait: no wake-up is lost.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextID = 0
        var abandoned: Set<Int> = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes every waiter, or the next one to wait if none is waiting now.
    public func wake() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if state.waiters.isEmpty {
                state.pending = true
                return []
            }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when woken, after `timeout`, or when the task is cancelled.
    public func wait(upTo timeout: Duration) async {
        let id = state.withLock { state -> Int? in
            if state.pending {
                state.pending = false
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForWake(id) }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
            self.abandon(id)
        }
    }

    private func waitForWake(_ id: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.abandoned.remove(id) != nil { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            abandon(id)
        }
    }

    /// Resumes the waiter `id` if it is still waiting; if it has not started waiting yet,
    /// marks it so that it returns as soon as it does.
    private func abandon(_ id: Int) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let continuation = state.waiters.removeValue(forKey: id) { return continuation }
            state.abandoned.insert(id)
            return nil
        }
        continuation?.resume()
    }
}

/// What kind of work a request has just committed, so only the workers that take it are
/// woken: an ingest must not make every delivery worker run its claim query.
public enum WorkKind: Sendable {
    case verification, delivery, replay
}
