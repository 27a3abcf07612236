import Synchronization

/// Coalesces concurrent requests into shared commits (group commit). A request that finds
/// a committer free is committed at once, alone; requests that arrive while every committer
/// is busy wait and go together in the next batch. Each caller gets its own result, and only
/// after the commit that holds its request has returned: nothing is acknowledged before it
/// is durable.
///
/// On an idle server this adds no latency (each request is its own batch); under load the
/// batches grow by themselves, so a commit's fixed cost (a round trip, a WAL flush) is paid
/// once per batch rather than once per request.
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

    private struct State {
        var queue: [Queued] = []
        /// Callers not answered yet, queued or in a commit.
        var waiting: [Int: CheckedContinuation<Output, any Error>] = [:]
        var nextID = 0
        var committers = 0
    }

    private let state = Mutex(State())
    private let maximumBatch: Int
    private let maximumCommitters: Int
    private let commit: Commit

    /// - maximumBatch: the most requests one commit takes.
    /// - maximumCommitters: how many batches may be committing at once (each holds a
    ///   database connection while it does).
    public init(maximumBatch: Int, maximumCommitters: Int, commit: @escaping Commit) {
        precondition(maximumBatch > 0 && maximumCommitters > 0)
        self.maximumBatch = maximumBatch
        self.maximumCommitters = maximumCommitters
        self.commit = commit
    }

    /// Commits `input` with whatever else is waiting. A cancelled caller stops waiting at
    /// once with `CancellationError`: a request still queued is dropped; one already in a
    /// commit may still be written, as a cancelled query may (so a caller that gives up
    /// answers "try again", never "stored").
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
                let startsCommitter = state.withLock { state -> Bool in
                    state.queue.append(Queued(id: id, input: input))
                    state.waiting[id] = continuation
                    guard state.committers < maximumCommitters else { return false }
                    state.committers += 1
                    return true
                }
                if startsCommitter {
                    Task { await self.commitUntilEmpty() }
                }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                state.queue.removeAll { $0.id == id }
                return state.waiting.removeValue(forKey: id)
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// One committer: commits batches until the queue is empty, then stops.
    private func commitUntilEmpty() async {
        while true {
            let done = state.withLock { state -> Bool in
                guard state.queue.isEmpty else { return false }
                state.committers -= 1
                return true
            }
            if done { return }
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
                    return batch
                }
            }
            let results: [Result<Output, any Error>]
            let batch: [Queued]
            do {
                results = try await commit { take().map(\.input) }
                batch = taken.withLock { $0 } ?? []
            } catch {
                // It could not write, maybe before taking anything (no connection): the batch
                // it held, or would have taken, gets the error rather than waiting for it.
                batch = take()
                results = Array(repeating: .failure(error), count: batch.count)
            }
            let answers = state.withLock { state in
                batch.enumerated().compactMap { index, queued in
                    state.waiting.removeValue(forKey: queued.id).map {
                        ($0, index < results.count ? results[index] : .failure(GroupCommitError.missingResult))
                    }
                }
            }
            for (continuation, result) in answers { continuation.resume(with: result) }
        }
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
