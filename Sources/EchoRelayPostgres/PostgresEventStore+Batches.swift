import EchoRelayCore
import PostgresNIO

/// The batch writes the queue's completers call (`CompletionStatements`): ingests,
/// verification outcomes and delivery attempts that arrive at about the same time share one
/// statement and one commit.
extension PostgresEventStore: CompletionStatements {
    /// Writes a batch on one connection, taken off the completer's queue only once the
    /// connection is held: while the database is away nothing is taken, so a request that
    /// times out meanwhile (503) is never written later. A write still running at `limit` has
    /// its host dropped (`DatabaseClient`: its connections closed, a new pool), so a server
    /// that stops answering, or a statement lost on a connection that had just closed, fails
    /// one batch instead of stalling every later one.
    func writeBatch<Input: Sendable, Output: Sendable>(
        within limit: Duration, take: @escaping @Sendable () -> [Input],
        _ write: @escaping @Sendable ([Input], PostgresConnection) async -> [Result<Output, any Error>]
    ) async throws -> [Result<Output, any Error>] {
        do {
            return try await client.withConnection(limit: limit) { connection in
                let batch = take()
                return batch.isEmpty ? [] : await write(batch, connection)  // empty: every caller gave up
            }
        } catch {
            // No connection (the database away, the pool closing): every caller of the
            // batch hears it as the store's error, so the API answers 503, not 500.
            throw StoreError.wrap(error)
        }
    }

    /// How long a write of finished work called on the store itself may take: the default
    /// work lease, after which the work is another worker's anyway.
    static let workFlushLimit: Duration = .seconds(60)

    /// The positions a batch statement answers with (`SELECT position, handed_off,
    /// made_work_due`): the rows it wrote, each with the deliveries it leased to the
    /// hand-off's owner and whether the batch left deliveries due for a claim.
    static func positions<Rows: AsyncSequence>(_ rows: Rows) async throws -> [Int: FinishedWork]
    where Rows.Element == (Int, [Int64]?, Bool) {
        var positions: [Int: FinishedWork] = [:]
        for try await (position, handedOff, madeWorkDue) in rows {
            positions[position] = FinishedWork(kept: true, handedOff: handedOff ?? [], madeWorkDue: madeWorkDue)
        }
        return positions
    }

    /// Writes leased items (verification outcomes, delivery attempts) with `statement`, which
    /// answers for each item whose lease was still ours, by position, the deliveries it handed
    /// off: the whole batch at once, or, if that fails as a whole (a deadlock, a lost
    /// connection, one item's bad value), each item alone, so each caller gets its own answer.
    static func writeLeased<Item>(
        _ items: [Item], _ what: String, logger: Logger, _ statement: ([Item]) async throws -> [Int: FinishedWork]
    ) async -> [Result<FinishedWork, any Error>] {
        func answer(_ written: [Int: FinishedWork], _ position: Int) -> FinishedWork {
            written[position] ?? FinishedWork(kept: false, madeWorkDue: false)
        }
        do {
            let written = try await statement(items)
            return items.indices.map { .success(answer(written, $0)) }
        } catch {
            guard items.count > 1 else { return [.failure(StoreError.wrap(error))] }
            logger.debug("a batch of \(what) failed as a whole; writing them one by one",
                         metadata: ["items": "\(items.count)", "error": "\(StoreError.wrap(error))"])
            var results: [Result<FinishedWork, any Error>] = []
            for item in items {
                results.append(await Result(catching: {
                    do {
                        return answer(try await statement([item]), 0)
                    } catch {
                        throw StoreError.wrap(error)
                    }
                }))
            }
            return results
        }
    }
}
