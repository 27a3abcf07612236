import EchoRelayCore
import Logging
import ServiceLifecycle

/// One kind of work, as a job kind is in River: the queue's side of it — what to work on
/// next (hand-offs first, then a claim when one is due) and what to record once a worker has
/// done an item — which `run` drives with the worker's function. Verification and delivery are
/// the kinds; adding one is a type that conforms, its store statements, and a worker.
public protocol WorkKind: Sendable {
    associatedtype Item: Sendable
    /// What the worker made of an item, for `complete` to record.
    associatedtype Done: Sendable

    var loop: WorkLoop { get }
    /// Set at a graceful stop: the loop ends, and a claim running is cancelled.
    var stopping: StopFlag { get }
    /// Up to `free` items to work on now, leased to this process.
    func next(upTo free: Int) async throws -> [Item]
    /// Records what the worker made of `item`, and says what that left for the loop.
    func complete(_ item: Item, _ done: Done) async -> WorkLeft
    /// Runs beside the loop until the stop: a sweep that only this kind needs.
    func alongside() async
    /// Once the loop has ended: gives back what was leased and never started.
    func stopped() async
}

extension WorkKind {
    public func alongside() async {}
    public func stopped() async {}

    /// Works until the graceful stop, `loop.concurrency` items at a time, each done by `work`;
    /// nothing is claimed before `ready` opens.
    public func run(ready: Gate, work: @escaping @Sendable (Item) async -> Done) async {
        await withGracefulShutdownHandler {
            await ready.wait()
            await withDiscardingTaskGroup { group in
                group.addTask { await alongside() }
                await loop.run(until: stopping) { free in
                    try await next(upTo: free)
                } process: { item in
                    await complete(item, await work(item))
                }
            }
        } onGracefulShutdown: {
            stopping.set()
            loop.wake.wake()
            ready.open()  // a worker still waiting for the schema just exits
        }
        await stopped()
    }
}
