import EchoRelayCore
import Logging
import Synchronization

/// The claim-and-process loop both workers share: keeps up to `concurrency` items in
/// flight, claims as many as there are free slots in one batch once at least a quarter of
/// the slots are free, and when nothing is due waits for a wake-up or the poll interval.
/// A finished item wakes it only when there is something to take: the last claim came back
/// full, the item made work due that a claim finds, or it left work in the inbox (`WorkLeft`),
/// as River's producer fetches again only after a full fetch. Once stopped, in-flight items get
/// `shutdownGrace` to finish; then they are cancelled, and each hands its item back.
struct WorkLoop: Sendable {
    let concurrency: Int
    let pollInterval: Duration
    let shutdownGrace: Duration
    let wake: WakeSignal
    let logger: Logger

    func run<Item: Sendable>(
        until stopping: Flag,
        claim: @escaping @Sendable (Int) async throws -> [Item],
        process: @escaping @Sendable (Item) async -> WorkLeft
    ) async {
        let inFlight = Counter()
        let lastClaimFull = Switch()
        var failures = 0
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled, !stopping.isSet {
                let free = concurrency - inFlight.value
                // Under load, slots free up one at a time; a claim per free slot would run the
                // claim query once per item (for deliveries, a scan of every pending one).
                // Waiting until a quarter of the slots are free claims in batches instead.
                if free >= max(1, concurrency / 4) {
                    do {
                        let items = try await unlessStopped(stopping) { try await claim(free) }
                        failures = 0
                        lastClaimFull.isOn = items.count == free
                        for item in items {
                            inFlight.add(1)
                            group.addTask {
                                let left = await process(item)
                                inFlight.add(-1)
                                if left == .forClaim || lastClaimFull.isOn || stopping.isSet {
                                    wake.wake()
                                } else if left == .inInbox {
                                    wake.wake(claim: false)
                                }
                            }
                        }
                        if items.count == free { continue }  // there may be more due right now
                    } catch is CancellationError where stopping.isSet {
                        break
                    } catch {
                        failures += 1
                        logger.error("claiming work failed", metadata: ["error": "\(error)"])
                        try? await Task.sleep(for: backOff(after: failures, upTo: pollInterval))
                    }
                }
                await wake.wait(upTo: pollInterval)
            }
            let deadline = ContinuousClock.now + shutdownGrace
            while inFlight.value > 0, ContinuousClock.now < deadline {
                await wake.wait(upTo: min(deadline - ContinuousClock.now, .milliseconds(100)))
            }
            if inFlight.value > 0 {
                logger.notice("cancelling work still in flight at shutdown; it is handed back", metadata: ["items": "\(inFlight.value)"])
                group.cancelAll()
            }
        }
    }
}

/// Runs `work` unless `stopping` is set first, in which case `work` is cancelled and this
/// throws `CancellationError`. A store call waiting for a database that is away would
/// otherwise hold a graceful stop until the database came back. The flag cancels the work
/// when it is set: no timer polls it (a poll was a dispatch timer per claim, a wake-up
/// of libdispatch's threads several times an event).
func unlessStopped<Result: Sendable>(
    _ stopping: Flag, _ work: @escaping @Sendable () async throws -> Result
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
func backOff(after failures: Int, upTo pollInterval: Duration) -> Duration {
    min(pollInterval, .milliseconds(100 * failures))
}

/// What a finished item leaves for its loop, which looks again only when there is something.
enum WorkLeft: Sendable {
    case nothing
    /// Work handed to this process's inbox: the loop takes it without a claim.
    case inInbox
    /// Work made due that only a claim finds.
    case forClaim
}

/// A count shared between the claim loop and the tasks it starts.
final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add(_ delta: Int) { count.withLock { $0 += delta } }
    /// Adds one and returns the new count.
    func next() -> Int { count.withLock { $0 += 1; return $0 } }
    func reset() { count.withLock { $0 = 0 } }
}

/// A flag turned on and off from any task.
final class Switch: Sendable {
    private let state = Mutex(false)
    var isOn: Bool {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}

/// A flag set once, from any task, that tells the work registered with it when it is set.
final class Flag: Sendable {
    private struct State {
        var isSet = false
        var handlers: [Int: @Sendable () -> Void] = [:]
        var nextKey = 0
    }

    private let state = Mutex(State())

    var isSet: Bool { state.withLock { $0.isSet } }

    func set() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.isSet else { return [] }
            state.isSet = true
            defer { state.handlers = [:] }
            return Array(state.handlers.values)
        }
        for handler in handlers { handler() }
    }

    /// Calls `handler` once when the flag is set, at once if it is set already; the key
    /// returned is for `forget`.
    func onSet(_ handler: @escaping @Sendable () -> Void) -> Int? {
        let key = state.withLock { state -> Int? in
            guard !state.isSet else { return nil }
            state.nextKey += 1
            state.handlers[state.nextKey] = handler
            return state.nextKey
        }
        if key == nil { handler() }
        return key
    }

    func forget(_ key: Int?) {
        guard let key else { return }
        _ = state.withLock { $0.handlers.removeValue(forKey: key) }
    }
}

/// Says yes at most once per interval, for work that need not run at every call.
final class Pace: Sendable {
    private let next = Mutex<ContinuousClock.Instant?>(nil)

    func due(every interval: Duration) -> Bool {
        let now = ContinuousClock.now
        return next.withLock { next in
            if let due = next, now < due { return false }
            next = now + interval
            return true
        }
    }
}
