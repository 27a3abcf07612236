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
}

extension AsyncSequence {
    /// Every element, in order: for the few rows a decoded query returns.
    func gathered() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }
}
