import EchoRelayCore

/// `work`'s result, or a `TestSetupError` naming `step` once `limit` has passed, without
/// waiting for `work` to end (it is cancelled and left to finish on its own). A step that
/// neither finishes nor heeds cancellation then fails its test, naming itself, instead of
/// hanging the whole suite: swift-testing's time limit only cancels.
public func within<Value: Sendable>(
    _ limit: Duration, _ step: String, _ work: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    do {
        return try await awaitResult(within: limit, work).get()
    } catch is TimeoutError {
        throw TestSetupError("\(step) did not finish within \(limit)")
    }
}
