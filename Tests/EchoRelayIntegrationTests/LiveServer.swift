import EchoRelayCore
import EchoRelayServer
import EchoRelaySharedSignals
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOHTTP1
import PostgresNIO
import TestSupport
import Testing

/// A real `serve` application on an ephemeral loopback port, backed by its own fresh
/// PostgreSQL database, for one test.
struct LiveServer: Sendable {
    static let ingestSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let adminToken = "test-admin-token-0123456789"

    let http: HTTPTestClient
    let database: TestDatabase
    let signer = EventSigner(secret: ingestSecret)

    /// POSTs a body to /v1/events, signed with the ingest secret.
    func ingest(_ body: [UInt8], contentType: String = "application/json") async throws -> TestHTTPResponse {
        try await http.send(.POST, "/v1/events", headers: try signer.headers(for: body, contentType: contentType), body: body)
    }

    func rowCounts() async throws -> [String: Int] {
        try await database.withClient { try await $0.ingestRowCounts() }
    }

    /// An echo configuration that allows no real host: events are rejected before any
    /// request leaves the machine.
    static let noEcho = EchoConfiguration(consumerKey: "test-consumer-key", allowedHosts: ["127.0.0.1:1"])

    /// Runs a server for one test. `role: .ingest` keeps events pending (no workers).
    static func run(
        migrate: Bool = true, ingestSecrets: [String] = [ingestSecret], role: ServerRole = .ingest,
        echo: EchoConfiguration = noEcho, delivery: DeliveryConfiguration = DeliveryConfiguration(allowPrivateSubscribers: true),
        secretKey: String? = nil, requestTimeout: Duration = .seconds(30), ingestWait: Duration = .seconds(10),
        backlogLimit: Int? = ServerConfiguration.defaultBacklogLimit, backlogSampleInterval: Duration = .milliseconds(500),
        consoleSessionSweepInterval: Duration = .seconds(300), securityEvents: SecurityEventReceiverSettings? = nil,
        retention: RetentionPolicy = .defaults, pruneInterval: Duration = .seconds(600),
        authenticationFailureLimit: Int? = nil,
        logger: Logger = TestLogger.quiet, database: TestDatabase? = nil, _ body: @Sendable (LiveServer) async throws -> Void
    ) async throws {
        // A given database outlives this server, as across a restart.
        @Sendable func serve(_ database: TestDatabase) async throws {
            var configuration = ServerConfiguration(
                host: "127.0.0.1", port: 0, databaseURL: Secret(database.url),
                ingestSecrets: ingestSecrets.map(Secret.init), adminToken: Secret(adminToken),
                secretKey: secretKey.map(Secret.init), migrateAtStart: migrate, role: role, echo: echo, delivery: delivery,
                requestTimeout: requestTimeout, ingestWait: ingestWait, backlogLimit: backlogLimit,
                backlogSampleInterval: backlogSampleInterval, consoleSessionSweepInterval: consoleSessionSweepInterval,
                retention: retention, pruneInterval: pruneInterval, securityEvents: securityEvents
            )
            // The queue gauges a test scrapes are read often; the tests poll until they show.
            configuration.metricsSampleInterval = .milliseconds(100)
            if let authenticationFailureLimit { configuration.authenticationFailureLimit = authenticationFailureLimit }
            let app = try await EchoRelayServer.makeApplication(configuration, logger: logger)
            try await app.test(.live) { client in
                try await body(LiveServer(http: HTTPTestClient(port: try #require(client.port)), database: database))
            }
        }
        if let database {
            try await serve(database)
        } else {
            try await TestDatabase.withFresh { try await serve($0) }
        }
    }
}
