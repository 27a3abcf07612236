import EchoRelayCore
import Logging
import Synchronization

/// The embedded store's group commits: writes that arrive at about the same time share one
/// transaction, so one sync of the log serves them all (`synchronous = FULL` syncs every commit).
extension SQLiteEventStore {
    /// One transaction for a whole batch, taken once the connection is free. `write` answers
    /// each item. If the transaction fails as a whole, each item is written alone in a
    /// transaction of its own, so one bad item fails alone.
    static func writeBatch<Item: Sendable, Output: Sendable>(
        _ what: String, take: @escaping @Sendable () -> [Item], session: SQLiteSession, logger: Logger,
        _ write: ([Item], SQLiteDB) async throws -> [Result<Output, any Error>]
    ) async throws -> [Result<Output, any Error>] {
        let taken = Mutex<[Item]>([])
        do {
            return try await session.write { db in
                let items = take()
                taken.withLock { $0 = items }
                return items.isEmpty ? [] : try await write(items, db)  // empty: every caller gave up
            }
        } catch {
            let items = taken.withLock { $0 }
            guard items.count > 1 else {
                if items.isEmpty { throw error }  // no transaction began: the whole batch gets the error
                return [.failure(error)]
            }
            logger.debug("a batch of \(what) failed as a whole; writing them one by one",
                         metadata: ["items": "\(items.count)", "error": "\(error)"])
            var results: [Result<Output, any Error>] = []
            for item in items {
                results.append(await Result(catching: { try await session.write { db in try await write([item], db)[0].get() } }))
            }
            return results
        }
    }
}
