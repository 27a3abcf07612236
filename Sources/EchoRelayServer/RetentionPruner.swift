import EchoRelayCore
import Logging
import ServiceLifecycle
import Synchronization

/// Prunes what retention no longer keeps, every `interval`, in small batches with pauses, so
/// that the hot path does not feel it. Worker processes run it; several may at once, since
/// each batch is a short transaction that removes only what is still there.
struct RetentionPruner: Service, CustomStringConvertible {
    var description: String { "RetentionPruner" }

    let pruning: Pruning
    let interval: Duration
    /// Opens once the schema is migrated; nothing is pruned before.
    let ready: Gate
    let metrics: RelayMetrics
    let logger: Logger

    func run() async throws {
        let wake = WakeSignal()
        let stopping = Mutex(false)
        await withGracefulShutdownHandler {
            await ready.wait()
            while !Task.isCancelled, !stopping.withLock { $0 } {
                do {
                    let removed = try await cancelWhenGracefulShutdown { [pruning] in try await pruning.run(dryRun: false) }
                    metrics.pruned(removed)
                    if !removed.isEmpty {
                        logger.info("retention pruned", metadata: [
                            "events": "\(removed.events)", "deliveries": "\(removed.deliveries)", "attempts": "\(removed.attempts)",
                            "test_deliveries": "\(removed.testDeliveries)",
                        ])
                    }
                } catch where stopping.withLock({ $0 }) {
                    break
                } catch {
                    // Nothing is lost by waiting: the next round takes up what this one left.
                    logger.warning("retention pruning failed; it runs again next round", metadata: ["error": "\(error)"])
                }
                await wake.wait(upTo: interval)
            }
        } onGracefulShutdown: {
            stopping.withLock { $0 = true }
            wake.wake()
            ready.open()
        }
    }
}
