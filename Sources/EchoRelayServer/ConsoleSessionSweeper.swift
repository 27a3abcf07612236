import EchoRelayCore
import Logging
import ServiceLifecycle

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
        await PeriodicRounds.run(ready: ready) { stopping in
            do {
                let removed = try await cancelWhenGracefulShutdown { [store] in try await store.removeExpiredConsoleSessions() }
                if removed > 0 { logger.info("expired console sessions removed", metadata: ["sessions": "\(removed)"]) }
            } catch where stopping() {
                return nil
            } catch {
                // Expired sessions are refused at sign-in anyway; they only take room.
                logger.warning("expired console sessions could not be removed", metadata: ["error": "\(error)"])
            }
            return interval
        }
    }
}
