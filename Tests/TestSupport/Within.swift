import EchoRelayCore
import EchoRelayQueue

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

/// Returns once `done()` is true, checking every 20 ms; a `TestSetupError` naming `what` once
/// `limit` has passed.
/// `what` is read when it fails, so it may say how far things got.
public func waitUntil(within limit: Duration, _ what: @autoclosure () -> String, _ done: () -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while !done() {
        guard ContinuousClock.now < deadline else { throw TestSetupError("\(what()) did not happen within \(limit)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
