import EchoRelayCore
import EchoRelayServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import TestSupport
import Testing

/// A live `serve` application for the hardening tests, on either store, with the settings a
/// test changes. The store's location outlives each server, as across a restart.
enum HardeningServer {
    /// A fresh PostgreSQL database or SQLite file; its `ECHORELAY_DATABASE_URL`.
    static func withStore(_ kind: StoreKind, _ body: @Sendable (String) async throws -> Void) async throws {
        switch kind {
        case .postgres, .postgresByUser:
            try await TestDatabase.withFresh { try await body($0.url) }
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-hardening-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await body("sqlite:" + folder.appendingPathComponent("echorelay.sqlite").path)
        }
    }

    /// Runs `serve` (every role) on `databaseURL` with `ECHORELAY_ADMIN_TOKEN=adminToken`.
    static func run(
        databaseURL: String, adminToken: String? = LiveServer.adminToken, _ body: @Sendable (HTTPTestClient) async throws -> Void
    ) async throws {
        try await run(databaseURL: databaseURL, adminToken: adminToken, configure: { _ in }, body)
    }

    /// The same, with the settings `configure` changes.
    static func run(
        databaseURL: String, adminToken: String? = LiveServer.adminToken, configure: (inout ServerConfiguration) -> Void,
        _ body: @Sendable (HTTPTestClient) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration(
            host: "127.0.0.1", port: 0, databaseURL: Secret(databaseURL), ingestSecrets: [Secret(LiveServer.ingestSecret)],
            adminToken: adminToken.map(Secret.init), role: .all, echo: LiveServer.noEcho,
            delivery: DeliveryConfiguration(allowPrivateSubscribers: true)
        )
        configure(&configuration)
        let app = try await EchoRelayServer.makeApplication(configuration, logger: TestLogger.quiet)
        try await app.test(.live) { client in
            try await body(HTTPTestClient(port: try #require(client.port)))
        }
    }
}
