import EchoRelayCore
import Logging
import ServiceLifecycle

/// Prunes what retention no longer keeps, every `interval`, in small batches with rests
/// (`Pruning`), so that the hot path does not feel it. Worker processes run it; several may at
/// once, since each batch is a short transaction that removes only what is still there.
struct RetentionPruner: Service, CustomStringConvertible {
    var description: String { "RetentionPruner" }

    let pruning: Pruning
    let interval: Duration
    /// Opens once the schema is migrated; nothing is pruned before.
    let ready: Gate
    let metrics: RelayMetrics
    let logger: Logger

    func run() async throws {
        await PeriodicRounds.run(ready: ready) { stopping in
            do {
                let removed = try await cancelWhenGracefulShutdown { [pruning] in try await pruning.run(dryRun: false) }
                metrics.pruned(removed)
                if !removed.isEmpty {
                    logger.info("retention pruned",
                                metadata: Logger.Metadata(uniqueKeysWithValues: removed.named.map { ($0.name, "\($0.count)") }))
                }
            } catch where stopping() {
                return nil
            } catch {
                // Nothing is lost by waiting: the next round takes up what this one left.
                logger.warning("retention pruning failed; it runs again next round", metadata: ["error": "\(error)"])
            }
            return interval
        }
    }
}
