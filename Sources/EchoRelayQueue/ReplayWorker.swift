import EchoRelayCore
import Logging
import ServiceLifecycle

/// Works through bulk replays: creates their deliveries in small batches, in per-user order,
/// no faster than `rate` per second, so a replay of a million events cannot flood a backend
/// or starve live traffic. Each batch moves the replay's cursor in its own transaction, so a
/// restart resumes where it stopped.
public struct ReplayWorker: Service, CustomStringConvertible {
    public var description: String { "ReplayWorker" }

    let store: any ReplayStore
    /// Deliveries created per second, across every replay this process works on.
    let rate: Int
    let wake: WakeSignal
    let pollInterval: Duration
    let ready: Gate
    /// Called after each batch, to wake the delivery workers.
    let deliveriesCreated: @Sendable () -> Void
    let logger: Logger

    public init(store: any ReplayStore, rate: Int, wake: WakeSignal, pollInterval: Duration = .seconds(1), ready: Gate = Gate(open: true),
                deliveriesCreated: @escaping @Sendable () -> Void, logger: Logger) {
        precondition(rate > 0, "the replay rate must be positive")
        self.store = store
        self.rate = rate
        self.wake = wake
        self.pollInterval = pollInterval
        self.ready = ready
        self.deliveriesCreated = deliveriesCreated
        self.logger = logger
    }

    /// About ten batches a second: small enough to be smooth, large enough to be cheap.
    var batchSize: Int { max(1, rate / 10) }

    public func run() async throws {
        let stopping = StopFlag()
        await withGracefulShutdownHandler {
            await ready.wait()
            var failures = 0
            while !Task.isCancelled, !stopping.isSet {
                do {
                    guard let created = try await unlessStopped(stopping, { try await store.advanceReplays(limit: batchSize) }) else {
                        await wake.wait(upTo: pollInterval)
                        continue
                    }
                    failures = 0
                    if created > 0 {
                        deliveriesCreated()
                        // Pace by what was created: `created` deliveries take created/rate seconds.
                        try? await Task.sleep(for: .seconds(Double(created) / Double(rate)))
                    }
                } catch is CancellationError where stopping.isSet {
                    break
                } catch {
                    failures += 1
                    logger.error("advancing a replay failed", metadata: ["error": "\(error)"])
                    try? await Task.sleep(for: backOff(after: failures, upTo: pollInterval))
                }
            }
        } onGracefulShutdown: {
            stopping.set()
            wake.wake()
            ready.open()
        }
    }
}
