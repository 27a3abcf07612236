import Synchronization

/// Thrown by `withTimeout` when the work did not finish in time.
public struct TimeoutError: Error, CustomStringConvertible {
    public let duration: Duration

    public init(duration: Duration) {
        self.duration = duration
    }

    public var description: String { "timed out after \(duration)" }
}

/// Runs `work`, cancelling it and throwing `TimeoutError` if it takes longer than `duration`.
public func withTimeout<Result: Sendable>(
    _ duration: Duration, _ work: @Sendable @escaping () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result.self) { group in
        group.addTask { try await work() }
        group.addTask {
            try await Task.sleep(for: duration)
            throw TimeoutError(duration: duration)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// `work`'s result, or `TimeoutError` once `limit` has passed, without waiting for `work` to
/// end: it is cancelled and left to finish on its own. For work that may neither finish nor
/// heed cancellation (a query on a connection whose host went away), where `withTimeout`
/// would wait for it.
public func awaitResult<Value: Sendable>(
    within limit: Duration, _ work: @escaping @Sendable () async throws -> Value
) async -> Result<Value, any Error> {
    await withCheckedContinuation { continuation in
        let once = FirstAnswer(continuation)
        let worker = Task {
            do { once.answer(.success(try await work())) } catch { once.answer(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: limit)
            if once.answer(.failure(TimeoutError(duration: limit))) { worker.cancel() }
        }
    }
}

/// Resumes a continuation with the first answer given, and ignores the others.
public final class FirstAnswer<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Result<Value, any Error>, Never>?>

    public init(_ continuation: CheckedContinuation<Result<Value, any Error>, Never>) {
        self.continuation = Mutex(continuation)
    }

    /// True if this was the first answer.
    @discardableResult
    public func answer(_ result: Result<Value, any Error>) -> Bool {
        guard let continuation = continuation.withLock({ $0.take() }) else { return false }
        continuation.resume(returning: result)
        return true
    }
}
