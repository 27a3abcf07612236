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
            if let own = error.closureError as? SubscriptionLimitReached { throw own }
            throw StoreError.wrap(error.beginError ?? error.closureError ?? error.commitError ?? error)
        } catch {
            throw StoreError.wrap(error)
        }
    }

    /// `transaction`, answered once the commit is as durable as the store promises: with
    /// `Durability.standby`, a standby holds it (checked on the same connection, so on the
    /// server that committed it). For what is acknowledged to someone outside: a SET received.
    func durableTransaction<Result: Sendable>(
        _ body: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        guard let standby else { return try await transaction(body) }
        do {
            return try await client.withConnection { connection in
                let result = try await connection.withTransaction(logger: logger, body)
                try await standby.confirm(on: connection, logger: logger)
                return result
            }
        } catch let error as PostgresTransactionError {
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
