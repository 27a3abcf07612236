import Logging
import PostgresNIO

extension DatabaseClient {
    /// Runs a client on the URL's hosts for the length of `body`, for one-shot commands
    /// outside a ServiceGroup (`migrate`, `tokens`).
    public static func withRunning<Result: Sendable>(
        _ endpoints: DatabaseEndpoints, logger: Logger, _ body: @Sendable (DatabaseClient) async throws -> Result
    ) async throws -> Result {
        let client = DatabaseClient(endpoints: endpoints, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}

extension PostgresClient {
    /// Runs one server's client for the length of `body` (tests and tools on one server).
    public static func withRunning<Result: Sendable>(
        _ configuration: Configuration, logger: Logger, _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}
