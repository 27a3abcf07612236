import PostgresNIO

/// Runs tasks on one NIO event loop: a task that talks to a connection of that loop then
/// writes its statements and reads their answers without a thread switch either way.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
