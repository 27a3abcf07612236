import EchoRelayCore
import PostgresNIO

extension PostgresEventStore {
    /// Runs `body` in one transaction. The domain errors it throws (a replay refused, an
    /// event not found) come out as they are; database errors become `StoreError`s, with a
    /// lost connection as `.unavailable`.
    func transaction<Result: Sendable>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        do {
            return try await client.withTransaction(logger: logger, isolation: isolation, body)
        } catch let error as PostgresTransactionError {
            if let own = error.closureError as? ReplayError { throw own }
            throw StoreError.wrap(error.beginError ?? error.closureError ?? error.commitError ?? error)
        } catch {
            throw StoreError.wrap(error)
        }
    }

    /// Runs `body` — a statement or a few, outside a transaction — with its database errors
    /// as `StoreError`s, a lost connection as `.unavailable`. A domain error is thrown before
    /// it, so that it is not wrapped.
    @discardableResult
    func wrapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw StoreError.wrap(error)
        }
    }

    /// The rows of one query, each read by `decode`, with the errors of `wrapped`.
    func rows<T>(_ query: PostgresQuery, _ decode: (PostgresStoreRow) throws -> T) async throws -> [T] {
        try await wrapped { try await client.query(query, logger: logger).storeRows().map(decode) }
    }
}

extension AsyncSequence {
    /// Every element, in order: for the few rows a decoded query returns.
    func gathered() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }
}
