import EchoRelayCore
import Logging
import ServiceLifecycle
import Synchronization

/// Deletes expired console sessions every `interval`, so that a session nobody signs out of
/// leaves the database when it expires, not at the next sign-in. Any process that serves the
/// console may run it: the deletes are idempotent.
struct ConsoleSessionSweeper: Service, CustomStringConvertible {
    var description: String { "ConsoleSessionSweeper" }

    let store: any ConsoleSessionStore
    let interval: Duration
    /// Opens once the schema is migrated; nothing is deleted before.
    let ready: Gate
    let logger: Logger

    func run() async throws {
        let wake = WakeSignal()
        let stopping = Mutex(false)
        await withGracefulShutdownHandler {
            await ready.wait()
            while !Task.isCancelled, !stopping.withLock { $0 } {
                do {
                    let removed = try await cancelWhenGracefulShutdown { [store] in try await store.removeExpiredConsoleSessions() }
                    if removed > 0 { logger.info("expired console sessions removed", metadata: ["sessions": "\(removed)"]) }
                } catch where stopping.withLock({ $0 }) {
                    break
                } catch {
                    // Expired sessions are refused at sign-in anyway; they only take room.
                    logger.warning("expired console sessions could not be removed", metadata: ["error": "\(error)"])
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
