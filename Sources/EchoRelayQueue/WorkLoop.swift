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
public struct WorkLoop: Sendable {
    public let concurrency: Int
    public let pollInterval: Duration
    public let shutdownGrace: Duration
    public let wake: WakeSignal
    public let logger: Logger

    /// The loop a kind's settings describe.
    public init(_ settings: some WorkLoopSettings, wake: WakeSignal, logger: Logger) {
        self.init(concurrency: settings.concurrency, pollInterval: settings.pollInterval, shutdownGrace: settings.shutdownGrace,
                  wake: wake, logger: logger)
    }

    public init(concurrency: Int, pollInterval: Duration, shutdownGrace: Duration, wake: WakeSignal, logger: Logger) {
        self.concurrency = concurrency
        self.pollInterval = pollInterval
        self.shutdownGrace = shutdownGrace
        self.wake = wake
        self.logger = logger
    }

    public func run<Item: Sendable>(
        until stopping: StopFlag,
        claim: @escaping @Sendable (Int) async throws -> [Item],
        process: @escaping @Sendable (Item) async -> WorkLeft
    ) async {
        let inFlight = SharedCount()
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

/// What a kind's settings say of its loop.
public protocol WorkLoopSettings: Sendable {
    /// Items in flight at once.
    var concurrency: Int { get }
    /// The longest an idle loop waits before it looks again, in case a wake-up was lost.
    var pollInterval: Duration { get }
    /// At a graceful stop, how long items in flight may take before they are cancelled.
    var shutdownGrace: Duration { get }
}
