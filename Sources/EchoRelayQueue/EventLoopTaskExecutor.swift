import NIOCore

/// Runs tasks on one NIO event loop: a task that talks to a connection of that loop then
/// writes its statements and reads their answers without a thread switch either way.
public final class EventLoopTaskExecutor: TaskExecutor {
    public let loop: any EventLoop

    public init(_ loop: any EventLoop) {
        self.loop = loop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
