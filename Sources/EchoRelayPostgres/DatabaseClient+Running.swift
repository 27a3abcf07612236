import Logging
import PostgresNIO
import ServiceLifecycle

extension DatabaseClient {
    /// Runs a client on the URL's hosts for the length of `body`, for one-shot commands
    /// outside a ServiceGroup (`migrate`, `tokens`).
    public static func withRunning<Result: Sendable>(
        _ endpoints: DatabaseEndpoints, logger: Logger, _ body: @Sendable (DatabaseClient) async throws -> Result
    ) async throws -> Result {
        try await withRunning(DatabaseClient(endpoints: endpoints, logger: logger), body)
    }

    /// Runs `service` (a client) for the length of `body`.
    public static func withRunning<Client: Service, Result: Sendable>(
        _ service: Client, _ body: @Sendable (Client) async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            defer { group.cancelAll() }
            return try await body(service)
        }
    }
}
