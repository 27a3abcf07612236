import EchoRelayQueue
import Synchronization
import Testing
@testable import EchoRelayWorkers

/// A worker's stop reaches the store call it is waiting on through the flag itself: the call
/// is cancelled when the flag is set, with no timer polling it.
@Suite(.timeLimit(.minutes(1))) struct StopFlagTests {
    @Test func workWaitingWhenTheFlagIsSetIsCancelledAndTheCallSaysSo() async throws {
        let stopping = StopFlag()
        let started = StopFlag()
        let sawCancellation = StopFlag()
        let call = Task {
            try await unlessStopped(stopping) {
                started.set()
                do {
                    try await Task.sleep(for: .seconds(30))  // a query to a database that is away
                } catch {
                    sawCancellation.set()
                    throw error
                }
                return 1
            }
        }
        while !started.isSet { await Task.yield() }
        let set = ContinuousClock.now
        stopping.set()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(sawCancellation.isSet, "the work itself was cancelled, not left running")
        #expect(ContinuousClock.now - set < .seconds(5))
    }

    @Test func workFinishedBeforeTheStopKeepsItsResult() async throws {
        let stopping = StopFlag()
        #expect(try await unlessStopped(stopping) { 7 } == 7)
        stopping.set()
        // Set before the call: the work is cancelled as it starts.
        await #expect(throws: CancellationError.self) {
            try await unlessStopped(stopping) {
                try await Task.sleep(for: .seconds(30))
                return 1
            }
        }
    }

    @Test func aFailureOfTheWorkIsTheCallersWhileNotStopped() async throws {
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await unlessStopped(StopFlag()) { () async throws -> Int in throw Refused() } }
    }

    @Test func handlersRunOnceWhenSetAndNotAfterTheyAreForgotten() {
        let flag = StopFlag()
        let calls = Mutex([String]())
        let kept = flag.onSet { calls.withLock { $0.append("kept") } }
        let forgotten = flag.onSet { calls.withLock { $0.append("forgotten") } }
        flag.forget(forgotten)
        flag.set()
        flag.set()
        _ = flag.onSet { calls.withLock { $0.append("late") } }  // already set: at once
        #expect(kept != nil)
        #expect(calls.withLock { $0 } == ["kept", "late"])
    }
}
