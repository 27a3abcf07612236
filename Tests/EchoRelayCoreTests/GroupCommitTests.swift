import Dispatch
import EchoRelayCore
import EchoRelayQueue
import Synchronization
import Testing

@Suite struct GroupCommitTests {
    /// A commit function that records what it was given and answers each input doubled,
    /// after `delay`, while counting how many commits run at once.
    final class Recorder: Sendable {
        struct State {
            var batches: [[Int]] = []
            var running = 0
            var mostRunning = 0
            var committed: Set<Int> = []
        }

        let state = Mutex(State())
        let delay: Duration

        init(delay: Duration) { self.delay = delay }

        func commit(_ inputs: [Int]) async -> [Result<Int, any Error>] {
            state.withLock {
                $0.batches.append(inputs)
                $0.running += 1
                $0.mostRunning = max($0.mostRunning, $0.running)
            }
            try? await Task.sleep(for: delay)
            state.withLock {
                $0.running -= 1
                $0.committed.formUnion(inputs)
            }
            return inputs.map { $0 % 7 == 0 ? .failure(Refused(input: $0)) : .success($0 * 2) }
        }
    }

    struct Refused: Error, Equatable { let input: Int }

    @Test func aLoneRequestIsCommittedAtOnceOnItsOwn() async throws {
        let recorder = Recorder(delay: .zero)
        let group = GroupCommit<Int, Int>(maximumBatch: 64) { take in await recorder.commit(take()) }
        #expect(try await group.submit(5) == 10)
        #expect(recorder.state.withLock { $0.batches } == [[5]])
    }

    /// Runs each job on a serial queue of its own, and tells whether its caller is on it.
    final class QueueExecutor: TaskExecutor, @unchecked Sendable {
        let queue = DispatchQueue(label: "GroupCommitTests.QueueExecutor")
        private let key = DispatchSpecificKey<Bool>()

        init() { queue.setSpecific(key: key, value: true) }

        var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    @Test(arguments: [true, false])
    func theCommitterRunsOnTheExecutorItIsGivenAndOnlyThen(given: Bool) async throws {
        let executor = QueueExecutor()
        let onExecutor = Mutex<[Bool]>([])
        let group = GroupCommit<Int, Int>(maximumBatch: 64, executor: given ? executor : nil) { take in
            let batch = take()
            onExecutor.withLock { $0.append(executor.isCurrent) }
            return batch.map { .success($0) }
        }
        #expect(try await group.submit(1) == 1)
        #expect(onExecutor.withLock { $0 } == [given])
    }

    @Test func concurrentRequestsShareCommitsAndEachGetsItsOwnAnswerAfterItsCommit() async throws {
        let recorder = Recorder(delay: .milliseconds(20))
        let flushed = Mutex<[Int]>([])
        let group = GroupCommit<Int, Int>(maximumBatch: 16, flushed: { size in flushed.withLock { $0.append(size) } }) { take in
            await recorder.commit(take())
        }
        let answers = await withTaskGroup(of: (Int, Result<Int, any Error>, Bool).self) { tasks in
            for input in 1...200 {
                tasks.addTask {
                    let result = await Result(catching: { try await group.submit(input) })
                    // Answered only once the commit holding this input has returned.
                    let committed = recorder.state.withLock { $0.committed.contains(input) }
                    return (input, result, committed)
                }
            }
            return await tasks.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 200)
        for (input, result, committed) in answers {
            #expect(committed, "input \(input) was answered before its commit returned")
            if input % 7 == 0 {
                #expect(throws: Refused(input: input)) { try result.get() }
            } else {
                #expect(try result.get() == input * 2)
            }
        }
        let state = recorder.state.withLock { $0 }
        #expect(state.batches.flatMap { $0 }.sorted() == Array(1...200), "each request is committed exactly once")
        #expect(state.batches.count < 200 / 4, "requests that wait share commits: \(state.batches.count) commits")
        #expect(state.batches.allSatisfy { $0.count <= 16 })
        #expect(state.mostRunning == 1, "one committer at a time")
        #expect(flushed.withLock { $0 } == state.batches.map(\.count), "every flush reports its size")
    }

    @Test func aCommitThatAnswersTooFewFailsTheRestInsteadOfLeavingThemWaiting() async throws {
        let group = GroupCommit<Int, Int>(maximumBatch: 8) { take in
            let inputs = take()
            try? await Task.sleep(for: .milliseconds(20))
            return [.success(inputs[0])]
        }
        let results = await withTaskGroup(of: Bool.self) { tasks in
            for input in 1...6 { tasks.addTask { (try? await group.submit(input)) != nil } }
            return await tasks.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 6)
        #expect(results.contains(false), "the inputs left without a result are failed")
    }
}

extension GroupCommitTests {
    /// A caller whose commit hangs (a database that does not answer) can still give up, as
    /// it could with a plain query: a request timeout must not wait for the database.
    @Test func aCancelledCallerStopsWaitingAndAQueuedRequestIsNeverCommitted() async throws {
        let recorder = Recorder(delay: .seconds(3600))
        let group = GroupCommit<Int, Int>(maximumBatch: 8) { take in await recorder.commit(take()) }
        let first = Task { try await group.submit(1) }  // its commit hangs
        while recorder.state.withLock({ $0.batches.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
        let second = Task { try await group.submit(2) }  // queued behind it
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        first.cancel()
        second.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(recorder.state.withLock { $0.batches } == [[1]], "the queued request was dropped, not committed")
    }
}

extension GroupCommitTests {
    /// While the committer waits for a database connection, nothing is taken: a caller that
    /// gives up meanwhile (answered 503) is never written once the database is back.
    @Test func aCallerThatGivesUpBeforeItsBatchIsTakenIsNeverCommitted() async throws {
        let connection = Gate()
        let recorder = Recorder(delay: .zero)
        let group = GroupCommit<Int, Int>(maximumBatch: 8) { take in
            await connection.wait()
            return await recorder.commit(take())
        }
        let gaveUp = Task { try await group.submit(1) }
        try await Task.sleep(for: .milliseconds(50))
        gaveUp.cancel()
        await #expect(throws: CancellationError.self) { try await gaveUp.value }
        let stayed = Task { try await group.submit(2) }
        try await Task.sleep(for: .milliseconds(50))
        connection.open()
        #expect(try await stayed.value == 4)
        #expect(recorder.state.withLock { $0.batches }.flatMap { $0 } == [2], "only the caller still waiting was written")
    }

    @Test func aCommitThatCannotStartFailsItsBatchWithItsError() async throws {
        struct NoConnection: Error, Equatable {}
        let group = GroupCommit<Int, Int>(maximumBatch: 8) { _ in throw NoConnection() }
        await #expect(throws: NoConnection.self) { try await group.submit(1) }
        await #expect(throws: NoConnection.self) { try await group.submit(2) }
    }
}

extension GroupCommitTests {
    /// Requests that arrive while a flush runs go together in the next one, whatever their
    /// number, so a busy committer's batches grow with the load.
    @Test func eachFlushTakesEverythingThatQueuedDuringThePreviousOne() async throws {
        let firstFlushTaken = Gate()
        let firstFlushMayFinish = Gate()
        let recorder = Recorder(delay: .zero)
        let group = GroupCommit<Int, Int>(maximumBatch: 64) { take in
            let inputs = take()
            if inputs == [1] {
                firstFlushTaken.open()
                await firstFlushMayFinish.wait()
            }
            return await recorder.commit(inputs)
        }
        let first = Task { try await group.submit(1) }
        await firstFlushTaken.wait()
        let rest = (2...41).map { input in Task { try await group.submit(input) } }
        try await Task.sleep(for: .milliseconds(50))  // all forty queue behind the first flush
        firstFlushMayFinish.open()
        #expect(try await first.value == 2)
        for task in rest { _ = try? await task.value }
        #expect(recorder.state.withLock { $0.batches.map { $0.sorted() } } == [[1], Array(2...41)])
    }

    /// A request still queued when its wait runs out is answered `TimeoutError` (a 503) and
    /// never written, even once the database comes back: the flush that was waiting for a
    /// connection then takes nothing.
    @Test func aRequestQueuedPastItsDeadlineTimesOutAndIsNeverCommitted() async throws {
        let connection = Gate()
        let recorder = Recorder(delay: .zero)
        let group = GroupCommit<Int, Int>(maximumBatch: 8, maximumWait: .milliseconds(100)) { take in
            await connection.wait()
            return await recorder.commit(take())
        }
        // Answered while the connection is still closed: at its deadline, not when the database came back.
        await #expect(throws: TimeoutError.self) { try await group.submit(1) }
        connection.open()
        // No later request is needed (whose own deadline a loaded machine could miss): the
        // waiting flush goes on once the connection is there, and takes what is queued.
        let deadline = ContinuousClock.now + .seconds(60)
        while recorder.state.withLock({ $0.batches.isEmpty }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(recorder.state.withLock { $0.batches } == [[]], "the flush went on and the request that timed out was not in it")
    }

    /// A request whose batch is being written when its wait runs out is answered at its
    /// deadline too (it may still land: its retry then finds it stored).
    @Test func aRequestWhoseCommitHangsIsAnsweredAtItsDeadline() async throws {
        let recorder = Recorder(delay: .seconds(3600))
        let group = GroupCommit<Int, Int>(maximumBatch: 8, maximumWait: .milliseconds(100)) { take in await recorder.commit(take()) }
        // Its commit never returns (an hour), so any answer is the deadline's.
        await #expect(throws: TimeoutError.self) { try await group.submit(1) }
        #expect(recorder.state.withLock { $0.batches } == [[1]])
    }
}
