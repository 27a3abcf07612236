import Foundation

/// Runs test work that computes for seconds without suspending (the fuzzers, the differential
/// parser checks) on a thread of its own instead of the concurrency pool, which has a thread
/// per core: on a 2-core machine two such tests side by side left every server, timer and
/// deadline of the integration tests waiting for seconds (a 200 ms limit seen firing after
/// 10 s). The work stays in its test's task, so its expectations are recorded as usual.
public func offTheConcurrencyPool<Result>(_ body: () throws -> Result) async rethrows -> Result {
    try await withTaskExecutorPreference(CPUBoundExecutor.shared) { try body() }
}

/// One thread that runs the jobs of tasks that prefer it, in turn.
public final class CPUBoundExecutor: TaskExecutor, @unchecked Sendable {  // `jobs` is touched only while `condition` is locked
    public static let shared = CPUBoundExecutor()
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init() {
        let thread = Thread { [self] in runJobs() }  // the shared executor lives as long as the process
        thread.name = "cpu-bound-tests"
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func runJobs() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
