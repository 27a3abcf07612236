import EchoRelayCore
import EchoRelayQueue
import ServiceLifecycle
import Synchronization

/// The loop of the services that work in rounds (the backlog sampler, the console session
/// sweeper, the retention pruner): wait for the schema, run a round, rest for what the round
/// asks, again, until a graceful shutdown, which also cuts short a rest and a wait for the
/// schema. A round handles its own errors; it is told whether shutdown has begun, so that an
/// error caused by the shutdown ends the loop (by answering nil) instead of being reported.
enum PeriodicRounds {
    static func run(ready: Gate, _ round: (_ stopping: @Sendable () -> Bool) async -> Duration?) async {
        let stoppingFlag = Mutex(false)
        let stopping: @Sendable () -> Bool = { stoppingFlag.withLock { $0 } }
        let wake = WakeSignal()
        await withGracefulShutdownHandler {
            await ready.wait()
            while !Task.isCancelled, !stopping() {
                guard let rest = await round(stopping) else { break }
                await wake.wait(upTo: rest)
            }
        } onGracefulShutdown: {
            stoppingFlag.withLock { $0 = true }
            wake.wake()
            ready.open()  // a service still waiting for the schema just exits
        }
    }
}
