import Synchronization

/// `work`'s result, or a `TestSetupError` naming `step` once `limit` has passed, without
/// waiting for `work` to end (it is cancelled and left to finish on its own). A step that
/// neither finishes nor heeds cancellation then fails its test, naming itself, instead of
/// hanging the whole suite: swift-testing's time limit only cancels.
public func within<Value: Sendable>(
    _ limit: Duration, _ step: String, _ work: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let result: Result<Value, any Error> = await withCheckedContinuation { continuation in
        let once = FirstAnswer(continuation)
        let worker = Task {
            do { once.answer(.success(try await work())) } catch { once.answer(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: limit)
            if once.answer(.failure(TestSetupError("\(step) did not finish within \(limit)"))) { worker.cancel() }
        }
    }
    return try result.get()
}

/// Resumes a continuation with the first answer given, and ignores the others.
private final class FirstAnswer<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Result<Value, any Error>, Never>?>

    init(_ continuation: CheckedContinuation<Result<Value, any Error>, Never>) {
        self.continuation = Mutex(continuation)
    }

    /// True if this was the first answer.
    @discardableResult
    func answer(_ result: Result<Value, any Error>) -> Bool {
        guard let continuation = continuation.withLock({ $0.take() }) else { return false }
        continuation.resume(returning: result)
        return true
    }
}
