import ServiceLifecycle

extension DatabaseClient {
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
