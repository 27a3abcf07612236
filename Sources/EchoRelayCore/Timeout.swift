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
