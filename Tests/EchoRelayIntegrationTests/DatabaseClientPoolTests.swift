import EchoRelayPostgres
import Foundation
import Testing
import TestSupport

/// serve's pools keep a few connections open, so that the connections the hot path uses go
/// back to the pool without postgres-nio starting an idle timer for each (a timer task and
/// a libdispatch timer a statement); the figures are in BENCHMARKS.md.
@Suite(.timeLimit(.minutes(1))) struct DatabaseClientPoolTests {
    @Test func aHostsPoolOpensItsWarmConnectionsBeforeAnyStatement() async throws {
        try await TestDatabase.withFresh { database in
            let name = "warm_" + UUID().uuidString.prefix(8).lowercased()
            var url = try #require(URLComponents(string: database.url))
            url.queryItems = (url.queryItems ?? []) + [URLQueryItem(name: "application_name", value: name)]
            let client = DatabaseClient(endpoints: try DatabaseURL.endpoints(url.string!), logger: TestLogger.quiet)
            let opened = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                var opened = 0
                let started = ContinuousClock.now
                while opened < DatabaseClient.warmConnections, ContinuousClock.now - started < .seconds(10) {
                    try await Task.sleep(for: .milliseconds(100))
                    opened = try await database.count("pg_stat_activity", where: "application_name = '\(name)'")
                }
                return opened
            }
            #expect(opened == DatabaseClient.warmConnections)
        }
    }
}
