import EchoRelayPostgres
import Foundation
import PostgresNIO
import Testing
import TestSupport

/// The pool of the host in use keeps a few connections open, so that the connections the hot
/// path uses go back to it without postgres-nio starting an idle timer for each (a timer task
/// and a libdispatch timer a statement; the figures are in BENCHMARKS.md). Other hosts' pools
/// open nothing.
@Suite(.timeLimit(.minutes(1))) struct DatabaseClientPoolTests {
    @Test func theOneHostsPoolOpensItsWarmConnectionsBeforeAnyStatement() async throws {
        try await TestDatabase.withFresh { database in
            let (url, name) = Self.named(database.url)
            let opened = try await Self.connections(named: name, in: database, url: url, reaching: DatabaseClient.warmConnections) { _ in }
            #expect(opened == DatabaseClient.warmConnections)
        }
    }

    @Test func withSeveralHostsOnlyTheHostInUseKeepsConnectionsWarm() async throws {
        try await TestDatabase.withFresh { database in
            // The same server twice: the first answers, so it is the host in use, and the second
            // is never checked. Its pool must open nothing: 8 warm connections and the first
            // host's check connection, not 8 more.
            let direct = try #require(URLComponents(string: database.url))
            let address = "\(direct.host!):\(direct.port!)"
            var text = "postgres://" + (direct.user.map { "\($0)@" } ?? "") + "\(address),\(address)" + direct.percentEncodedPath
            if let query = direct.percentEncodedQuery { text += "?" + query }
            let (url, name) = Self.named(text)
            let expected = DatabaseClient.warmConnections + 1
            let opened = try await Self.connections(named: name, in: database, url: url, reaching: expected) { client in
                try await client.query("SELECT 1")  // chooses the host
            }
            #expect(opened == expected)
        }
    }

    /// `url` with an application_name of its own, to count its sessions by.
    static func named(_ url: String) -> (String, String) {
        let name = "warm_" + UUID().uuidString.prefix(8).lowercased()
        return (url + (url.contains("?") ? "&" : "?") + "application_name=" + name, name)
    }

    /// How many sessions named `name` a client of `url` has open once `first` has run: polled
    /// until `expected` (or 10 s), then again a second later, so that more would be seen.
    static func connections(
        named name: String, in database: TestDatabase, url: String, reaching expected: Int,
        after first: @escaping @Sendable (DatabaseClient) async throws -> Void
    ) async throws -> Int {
        let client = DatabaseClient(endpoints: try DatabaseURL.endpoints(url), logger: TestLogger.quiet)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await first(client)
            let count = { try await database.count("pg_stat_activity", where: "application_name = '\(name)'") }
            var opened = 0
            let started = ContinuousClock.now
            while opened < expected, ContinuousClock.now - started < .seconds(10) {
                try await Task.sleep(for: .milliseconds(100))
                opened = try await count()
            }
            try await Task.sleep(for: .seconds(1))
            return try await count()
        }
    }
}
