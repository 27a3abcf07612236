import EchoRelayQueue
@testable import EchoRelayPostgres
import NIOCore
import NIOPosix
import Testing

/// The PostgreSQL committers run on an event loop so that a flush's statement and answer
/// need no thread switch: that holds only while the task stays on the loop across awaits.
@Suite struct EventLoopTaskExecutorTests {
    @Test func aTaskPreferringTheExecutorRunsOnItsLoopBeforeAndAfterAwaitingTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loop = group.next()
        let (before, after) = await Task(executorPreference: EventLoopTaskExecutor(loop)) {
            let before = loop.inEventLoop
            try? await loop.scheduleTask(in: .milliseconds(1)) {}.futureResult.get()
            return (before, loop.inEventLoop)
        }.value
        #expect(before)
        #expect(after)
        // The control: the same task without the preference runs off the loop.
        let elsewhere = await Task { loop.inEventLoop }.value
        #expect(!elsewhere)
        try await group.shutdownGracefully()
    }
}
