import Synchronization

/// Coalesces concurrent requests into shared commits (group commit). One committer at a time
/// flushes whatever arrived while the previous flush ran: an idle committer takes the first
/// request at once, so a lone request waits for nothing, and under load each flush carries
/// everything that queued behind the last one (about arrival rate × commit time + 1), so a
/// commit's fixed cost (a round trip, a WAL flush) is paid once per batch. Each caller gets
/// its own result, and only after the commit that holds its request has returned: nothing is
/// acknowledged before it is durable.
///
/// The committer is started when work arrives and ends when the queue is empty, so it needs
/// no service of its own; under load it is one task for the whole busy period.
///
/// With a `maximumWait`, a request not answered in time gets `TimeoutError` (a `503`): if it
/// was still queued it is dropped and never written; if its batch was already being written,
/// it may still land, as a cancelled query may (so a caller that gives up answers "try
/// again", never "stored", and a retry of the same id gets the stored receipt). One watcher
/// task checks the deadlines, sleeping until the earliest: there is no timer per request.
///
/// With a `flushLimit`, a flush still running that long after it began is abandoned: its
/// taken requests get `TimeoutError` (they may still land, as above), a new committer takes
/// what queued meanwhile, and the old one, should it ever return, answers nobody. A flush can
/// hang for good: a statement written to a connection that closed just before is lost without
/// an error inside postgres-nio, and its answer never comes.
public final class GroupCommit<Input: Sendable, Output: Sendable>: Sendable {
    /// Commits a batch and returns one result per input, in order. It calls `take` once,
    /// when it is ready to write (holding a database connection), to take the batch off the
    /// queue: until then, a caller that gives up is dropped and never written. An error it
    /// throws is every taken (or next) request's answer.
    public typealias Commit = @Sendable (_ take: @escaping @Sendable () -> [Input]) async throws -> [Result<Output, any Error>]

    private struct Queued {
        let id: Int
        let input: Input
    }

    private struct Waiter {
        let continuation: CheckedContinuation<Output, any Error>
        let deadline: ContinuousClock.Instant?
    }

    private struct State {
        /// Requests not yet taken, in arrival order.
        var queue: [Queued] = []
        /// Callers not answered yet, queued or in a commit.
        var waiting: [Int: Waiter] = [:]
        var nextID = 0
        var committing = false
        var watching = false
        /// The committer's number: an abandoned one's is behind, so it takes and answers nothing.
        var generation = 0
        /// When the flush under way began, and the requests it took (none yet: still queued).
        var flushStarted: ContinuousClock.Instant?
        var inFlight: [Int] = []

        /// Stops waiting for a caller: a queued request is dropped and will never be taken.
        mutating func remove(_ id: Int) -> Waiter? {
            guard let waiter = waiting.removeValue(forKey: id) else { return nil }
            if let index = queue.firstIndex(where: { $0.id == id }) { queue.remove(at: index) }
            return waiter
        }
    }

    private let state = Mutex(State())
    private let maximumBatch: Int
    private let maximumWait: Duration?
    private let flushLimit: Duration?
    private let flushed: @Sendable (_ batchSize: Int) -> Void
    private let executor: (any TaskExecutor)?
    private let commit: Commit

    /// - maximumBatch: the most requests one commit takes.
    /// - maximumWait: how long a caller waits for its answer before `TimeoutError`; nil waits
    ///   as long as the commit takes.
    /// - flushLimit: how long a flush may run before it is abandoned; nil: for ever.
    /// - flushed: told the size of each batch taken (a metric).
    /// - executor: where the committer runs; the thread that reads the database's answers
    ///   saves a thread switch on each way of every flush. Nil: the global executor.
    public init(
        maximumBatch: Int, maximumWait: Duration? = nil, flushLimit: Duration? = nil,
        flushed: @escaping @Sendable (_ batchSize: Int) -> Void = { _ in }, executor: (any TaskExecutor)? = nil,
        commit: @escaping Commit
    ) {
        precondition(maximumBatch > 0)
        self.maximumBatch = maximumBatch
        self.maximumWait = maximumWait
        self.flushLimit = flushLimit
        self.flushed = flushed
        self.executor = executor
        self.commit = commit
    }

    /// Commits `input` with whatever else is waiting. A cancelled caller stops waiting at
    /// once with `CancellationError`, on the same terms as a caller past its deadline.
    public func submit(_ input: Input) async throws -> Output {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard !Task.isCancelled else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                let deadline = maximumWait.map { ContinuousClock.now + $0 }
                let (committer, startsWatcher) = state.withLock { state -> (Int?, Bool) in
                    state.queue.append(Queued(id: id, input: input))
                    state.waiting[id] = Waiter(continuation: continuation, deadline: deadline)
                    let committer = state.committing ? nil : state.generation
                    state.committing = true
                    let startsWatcher = (deadline != nil || flushLimit != nil) && !state.watching
                    if startsWatcher { state.watching = true }
                    return (committer, startsWatcher)
                }
                if let committer { Task(executorPreference: executor) { await self.commitWhileQueued(generation: committer) } }
                if startsWatcher { Task { await self.watch() } }
            }
        } onCancel: {
            answer(state.withLock { $0.remove(id) }, with: .failure(CancellationError()))
        }
    }

    /// The committer: flushes batches until the queue is empty, then ends; or, abandoned (its
    /// `generation` passed), ends without answering anyone.
    private func commitWhileQueued(generation: Int) async {
        while true {
            let idle = state.withLock { state -> Bool in
                guard state.generation == generation else { return true }
                guard state.queue.isEmpty else {
                    state.flushStarted = .now
                    return false
                }
                state.committing = false
                return true
            }
            if idle { return }
            let taken = Mutex<[Queued]?>(nil)
            @Sendable func take() -> [Queued] {
                taken.withLock { taken in
                    if let taken { return taken }  // taken once: a second call gets the same batch
                    let batch = state.withLock { state -> [Queued] in
                        guard state.generation == generation else { return [] }  // abandoned: the queue is another's
                        let count = min(maximumBatch, state.queue.count)
                        defer { state.queue.removeFirst(count) }
                        let batch = Array(state.queue.prefix(count))
                        state.inFlight = batch.map { $0.id }  // closures, not key paths: a generic key path is built at run time on every call
                        return batch
                    }
                    taken = batch
                    if !batch.isEmpty { flushed(batch.count) }
                    return batch
                }
            }
            let results: [Result<Output, any Error>]
            let batch: [Queued]
            do {
                results = try await commit { take().map { $0.input } }
                // A commit that returned without taking answers the batch it should have taken
                // (with `missingResult`), rather than leaving it queued for another spin.
                batch = taken.withLock { $0 } ?? take()
            } catch {
                // It could not write, maybe before taking anything (no connection): the batch
                // it held, or would have taken, gets the error rather than waiting for it.
                batch = take()
                results = Array(repeating: .failure(error), count: batch.count)
            }
            let answers = state.withLock { state -> [(Waiter?, Result<Output, any Error>)] in
                guard state.generation == generation else { return [] }  // abandoned: answered already
                state.flushStarted = nil
                state.inFlight = []
                return batch.enumerated().map { index, queued in
                    (state.waiting.removeValue(forKey: queued.id),
                     index < results.count ? results[index] : .failure(GroupCommitError.missingResult))
                }
            }
            for (waiter, result) in answers { answer(waiter, with: result) }
        }
    }

    /// The watcher: answers callers past their deadline and abandons a flush past its limit,
    /// sleeping until the earliest of those; ends when nobody with a deadline is waiting and
    /// no flush is under way.
    private func watch() async {
        while true {
            let now = ContinuousClock.now
            let (expired, abandoned, restart, wakeAt) = state.withLock { state in
                var expired: [Waiter] = []
                if maximumWait != nil {
                    let due = state.waiting.filter { $0.value.deadline.map { $0 <= now } ?? false }.keys
                    expired = due.compactMap { state.remove($0) }
                }
                var abandoned: [Waiter] = []
                var restart: Int?
                if let flushLimit, let started = state.flushStarted, started + flushLimit <= now {
                    abandoned = state.inFlight.compactMap { state.waiting.removeValue(forKey: $0) }
                    state.inFlight = []
                    state.flushStarted = nil
                    state.generation += 1
                    state.committing = !state.queue.isEmpty
                    if state.committing { restart = state.generation }
                }
                var wakeAt = state.waiting.values.compactMap { $0.deadline }.min()
                if let flushLimit, state.committing {
                    // Never past a deadline that a request arriving now would have.
                    let flushDue = min((state.flushStarted ?? now) + flushLimit, now + (maximumWait ?? flushLimit))
                    wakeAt = min(wakeAt ?? flushDue, flushDue)
                }
                if wakeAt == nil { state.watching = false }
                return (expired, abandoned, restart, wakeAt)
            }
            if let maximumWait {
                for waiter in expired { answer(waiter, with: .failure(TimeoutError(duration: maximumWait))) }
            }
            if let flushLimit {
                for waiter in abandoned { answer(waiter, with: .failure(TimeoutError(duration: flushLimit))) }
            }
            if let restart { Task(executorPreference: executor) { await self.commitWhileQueued(generation: restart) } }
            guard let wakeAt else { return }
            try? await Task.sleep(until: wakeAt, clock: .continuous)
        }
    }

    private func answer(_ waiter: Waiter?, with result: Result<Output, any Error>) {
        waiter?.continuation.resume(with: result)
    }
}

/// A commit function returned fewer results than it was given inputs: a bug, reported to
/// the callers it left without an answer rather than leaving them waiting.
public enum GroupCommitError: Error, CustomStringConvertible {
    case missingResult

    public var description: String { "the batch commit returned no result for this request" }
}

