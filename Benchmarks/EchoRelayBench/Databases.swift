import EchoRelayPostgres
import Foundation
import Logging
import PostgresNIO

/// The PostgreSQL server the benchmark measures against: each measurement gets a fresh
/// database of its own, so one's leftovers never slow the next.
struct Databases {
    let adminURL: String
    let logger: Logger

    /// The URL of database `name` on the same server, as the admin URL with another path.
    func url(of name: String) throws -> String {
        guard var components = URLComponents(string: adminURL) else { throw BenchError("--database-url is not a URL") }
        components.path = "/" + name
        guard let url = components.string else { throw BenchError("--database-url is not a URL") }
        return url
    }

    /// Drops and creates database `name`.
    func recreate(_ name: String) async throws {
        try await withClient(url: adminURL) { client in
            try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"), logger: logger)
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        }
    }

    /// Runs `body` with a running client for `url`.
    func withClient<Result: Sendable>(url: String, _ body: (PostgresClient) async throws -> Result) async throws -> Result {
        let configuration = try DatabaseURL.postgresConfiguration(url)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let running = Task { await client.run() }
        defer { running.cancel() }
        return try await body(client)
    }
}

extension PostgresClient {
    /// The first column of the first row of `sql`, as an integer.
    func integer(_ sql: String, logger: Logger) async throws -> Int64 {
        for try await value in try await query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(Int64.self) {
            return value
        }
        throw BenchError("no row from: \(sql)")
    }
}
