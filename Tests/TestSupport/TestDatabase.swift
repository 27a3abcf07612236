import EchoRelayPostgres
import Foundation
import Logging
import PostgresNIO

/// A fresh, empty PostgreSQL database for one test, created on the private server that
/// `scripts/with-postgres` starts, and dropped afterwards. Tests run in parallel, each in
/// its own database.
public struct TestDatabase: Sendable {
    public let url: String
    public let name: String

    public init(url: String, name: String) {
        self.url = url
        self.name = name
    }

    public var configuration: PostgresClient.Configuration {
        get throws { try DatabaseURL.postgresConfiguration(url) }
    }

    static func serverURL() throws -> URLComponents {
        guard let text = ProcessInfo.processInfo.environment["ECHORELAY_TEST_DATABASE_URL"],
              let components = URLComponents(string: text) else {
            throw TestSetupError(
                "ECHORELAY_TEST_DATABASE_URL is not set. Run the suite with scripts/test, which starts a private "
                    + "PostgreSQL server, or wrap the command: scripts/with-postgres swift test"
            )
        }
        return components
    }

    /// Runs `body` with a new database and drops it afterwards, whatever happens.
    public static func withFresh<Result: Sendable>(
        _ body: @Sendable (TestDatabase) async throws -> Result
    ) async throws -> Result {
        let server = try serverURL()
        let name = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var components = server
        components.path = "/" + name
        let database = TestDatabase(url: components.string!, name: name)

        let admin = try DatabaseURL.postgresConfiguration(server.string!)
        _ = try await PostgresClient.withRunning(admin, logger: TestLogger.quiet) { client in
            try await client.query("CREATE DATABASE \(unescaped: name)")
        }
        do {
            let result = try await body(database)
            try await drop(name, admin: admin)
            return result
        } catch {
            try? await drop(name, admin: admin)
            throw error
        }
    }

    private static func drop(_ name: String, admin: PostgresClient.Configuration) async throws {
        _ = try await PostgresClient.withRunning(admin, logger: TestLogger.quiet) { client in
            try await client.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)")
        }
    }

    /// Runs `body` with a client connected to this database.
    public func withClient<Result: Sendable>(_ body: @Sendable (PostgresClient) async throws -> Result) async throws -> Result {
        try await PostgresClient.withRunning(try configuration, logger: TestLogger.quiet, body)
    }

    /// The number of rows in a table of this database.
    public func count(_ table: String, where condition: String = "true") async throws -> Int {
        try await withClient { try await $0.count(table, where: condition) }
    }
}

extension PostgresClient {
    /// The number of rows in a table (that meet `condition`, SQL written by the test).
    public func count(_ table: String, where condition: String = "true") async throws -> Int {
        let rows = try await query("SELECT count(*)::bigint FROM \(unescaped: table) WHERE \(unescaped: condition)")
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// Row counts of every table EchoRelay writes on ingest.
    public func ingestRowCounts() async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for table in ["events", "work_items", "user_sequences"] { counts[table] = try await count(table) }
        return counts
    }
}

public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

public enum TestLogger {
    /// A logger that prints nothing, for clients whose logs are noise in test output.
    public static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
}

extension PostgresClient {
    /// Runs one server's client for the length of `body`.
    static func withRunning<Result: Sendable>(
        _ configuration: Configuration, logger: Logger, _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        try await DatabaseClient.withRunning(PostgresClient(configuration: configuration, backgroundLogger: logger)) { client in
            try await body(client)
        }
    }
}
