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
    private let flushed: @Sendable (_ batchSize: Int) -> Void
    private let commit: Commit

    /// - maximumBatch: the most requests one commit takes.
    /// - maximumWait: how long a caller waits for its answer before `TimeoutError`; nil waits
    ///   as long as the commit takes.
    /// - flushed: told the size of each batch taken (a metric).
    public init(
        maximumBatch: Int, maximumWait: Duration? = nil, flushed: @escaping @Sendable (_ batchSize: Int) -> Void = { _ in },
        commit: @escaping Commit
    ) {
        precondition(maximumBatch > 0)
        self.maximumBatch = maximumBatch
        self.maximumWait = maximumWait
        self.flushed = flushed
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
                let (startsCommitter, startsWatcher) = state.withLock { state -> (Bool, Bool) in
                    state.queue.append(Queued(id: id, input: input))
                    state.waiting[id] = Waiter(continuation: continuation, deadline: deadline)
                    let startsCommitter = !state.committing
                    let startsWatcher = deadline != nil && !state.watching
                    state.committing = true
                    if startsWatcher { state.watching = true }
                    return (startsCommitter, startsWatcher)
                }
                if startsCommitter { Task { await self.commitWhileQueued() } }
                if startsWatcher { Task { await self.watchDeadlines() } }
            }
        } onCancel: {
            answer(state.withLock { $0.remove(id) }, with: .failure(CancellationError()))
        }
    }

    /// The committer: flushes batches until the queue is empty, then ends.
    private func commitWhileQueued() async {
        while true {
            let idle = state.withLock { state -> Bool in
                guard state.queue.isEmpty else { return false }
                state.committing = false
                return true
            }
            if idle { return }
            let taken = Mutex<[Queued]?>(nil)
            @Sendable func take() -> [Queued] {
                taken.withLock { taken in
                    if let taken { return taken }  // taken once: a second call gets the same batch
                    let batch = state.withLock { state -> [Queued] in
                        let count = min(maximumBatch, state.queue.count)
                        defer { state.queue.removeFirst(count) }
                        return Array(state.queue.prefix(count))
                    }
                    taken = batch
                    if !batch.isEmpty { flushed(batch.count) }
                    return batch
                }
            }
            let results: [Result<Output, any Error>]
            let batch: [Queued]
            do {
                results = try await commit { take().map(\.input) }
                // A commit that returned without taking answers the batch it should have taken
                // (with `missingResult`), rather than leaving it queued for another spin.
                batch = taken.withLock { $0 } ?? take()
            } catch {
                // It could not write, maybe before taking anything (no connection): the batch
                // it held, or would have taken, gets the error rather than waiting for it.
                batch = take()
                results = Array(repeating: .failure(error), count: batch.count)
            }
            let answers = state.withLock { state in
                batch.enumerated().map { index, queued in
                    (state.waiting.removeValue(forKey: queued.id),
                     index < results.count ? results[index] : .failure(GroupCommitError.missingResult))
                }
            }
            for (waiter, result) in answers { answer(waiter, with: result) }
        }
    }

    /// The watcher: answers callers past their deadline, sleeping until the earliest one;
    /// ends when nobody with a deadline is waiting.
    private func watchDeadlines() async {
        guard let maximumWait else { return }
        while true {
            let now = ContinuousClock.now
            let (expired, earliest) = state.withLock { state -> ([Waiter], ContinuousClock.Instant?) in
                let due = state.waiting.filter { $0.value.deadline.map { $0 <= now } ?? false }.keys
                let expired = due.compactMap { state.remove($0) }
                let earliest = state.waiting.values.compactMap(\.deadline).min()
                if earliest == nil { state.watching = false }
                return (expired, earliest)
            }
            for waiter in expired { answer(waiter, with: .failure(TimeoutError(duration: maximumWait))) }
            guard let earliest else { return }
            try? await Task.sleep(until: earliest, clock: .continuous)
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

extension Result where Failure == any Error {
    /// The result of an async throwing call.
    public init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
