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
    /// Commits a batch and returns one result per input, in order.
    public typealias Commit = @Sendable ([Input]) async -> [Result<Output, any Error>]

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

    /// One committer: takes batches off the queue until it is empty, then stops.
    private func commitUntilEmpty() async {
        while true {
            let batch = state.withLock { state -> [Queued] in
                let count = min(maximumBatch, state.queue.count)
                guard count > 0 else {
                    state.committers -= 1
                    return []
                }
                defer { state.queue.removeFirst(count) }
                return Array(state.queue.prefix(count))
            }
            guard !batch.isEmpty else { return }
            let results = await commit(batch.map(\.input))
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
