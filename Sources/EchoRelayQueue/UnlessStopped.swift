import Synchronization

/// Runs `work` unless `stopping` is set first, in which case `work` is cancelled and this
/// throws `CancellationError`. A store call waiting for a database that is away would
/// otherwise hold a graceful stop until the database came back. The flag cancels the work
/// when it is set: no timer polls it (a poll was a dispatch timer per claim, a wake-up
/// of libdispatch's threads several times an event).
public func unlessStopped<Result: Sendable>(
    _ stopping: StopFlag, _ work: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let task = Task { try await work() }
    let registration = stopping.onSet { task.cancel() }
    defer { stopping.forget(registration) }
    let result = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
    // Work that finished despite the stop is kept: a claim's items are leased to this process.
    if case .failure = result, stopping.isSet { throw CancellationError() }
    return try result.get()
}

/// How long a worker waits after its `failures`-th failed turn in a row (a claim, a replay's step)
/// before the next, while the database is away: 100 ms more each time, up to the poll interval.
public func backOff(after failures: Int, upTo pollInterval: Duration) -> Duration {
    min(pollInterval, .milliseconds(100 * failures))
}
