import EchoRelayCore
import NIOCore
import NIOPosix
import Synchronization

/// The attempts of one event's deliveries that went out together, written together, so that
/// an event's subscribers cost one commit rather than one each (issue 23: a lone event to two
/// subscribers in three write transactions). The first to finish waits for the others still
/// in flight, but at most `linger`, so a slow subscriber does not hold a fast one's record
/// (and the next delivery of its queue) longer than that. Whoever finishes the group last, or
/// the linger's end, writes what has finished; each waiter gets its own result.
public final class SiblingAttempts: Sendable {
    public typealias Write = @Sendable ([AttemptRecord]) async -> [Result<FinishedWork, any Error>]
    private typealias Waiter = CheckedContinuation<Result<FinishedWork, any Error>, Never>

    private struct State {
        var inFlight: Int
        var finished: [(record: AttemptRecord, waiter: Waiter)] = []
        var timer: Scheduled<Void>?

        /// Takes what has finished, and stops the linger's timer.
        mutating func take() -> [(record: AttemptRecord, waiter: Waiter)] {
            defer { finished = [] }
            timer?.cancel()
            timer = nil
            return finished
        }
    }

    private let state: Mutex<State>
    private let linger: Duration
    private let write: Write

    public init(count: Int, linger: Duration, write: @escaping Write) {
        state = Mutex(State(inFlight: count))
        self.linger = linger
        self.write = write
    }

    /// Records `record` with its siblings: returns once the write that holds it has.
    public func record(_ record: AttemptRecord) async -> Result<FinishedWork, any Error> {
        await withCheckedContinuation { (waiter: Waiter) in
            let (ready, startsTimer) = state.withLock { state in
                state.inFlight -= 1
                state.finished.append((record, waiter))
                if state.inFlight == 0 { return (state.take(), false) }
                return ([], state.finished.count == 1)
            }
            if !ready.isEmpty { Task { await flush(ready) } }
            if startsTimer {
                // An event loop's timer, not `Task.sleep`: NIO's loops run serve's tasks, but a
                // sleep is still a timer of libdispatch, armed and fired on its own threads. One
                // an event: at 100 events/s this saved 5% of serve's CPU (BENCHMARKS.md, run S).
                let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(linger)) {
                    let ready = self.state.withLock { $0.take() }
                    if !ready.isEmpty { Task { await self.flush(ready) } }
                }
                state.withLock { state in
                    // The group may have finished (and taken its timer) in the meantime.
                    if state.finished.isEmpty { timer.cancel() } else { state.timer = timer }
                }
            }
        }
    }

    /// One of the group ended with nothing to record (cancelled at shutdown): the others stop
    /// waiting for it.
    public func abandon() {
        let ready = state.withLock { state in
            state.inFlight -= 1
            return state.inFlight == 0 ? state.take() : []
        }
        if !ready.isEmpty { Task { await flush(ready) } }
    }

    private func flush(_ entries: [(record: AttemptRecord, waiter: Waiter)]) async {
        guard !entries.isEmpty else { return }
        let results = await write(entries.map { $0.record })
        for (index, entry) in entries.enumerated() {
            entry.waiter.resume(returning: index < results.count ? results[index] : .failure(GroupCommitError.missingResult))
        }
    }
}
