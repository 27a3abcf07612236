import EchoRelayCore
import EchoRelayPostgres
import Foundation
import Logging
import Testing
import TestSupport

/// A database connection that stops answering without closing (a frozen server, a network
/// path that drops packets) must not hold the ingest committer, and every request queued
/// behind it, until TCP gives up hours later: past the flush's limit the host's connections are
/// closed and its pool replaced, and later ingests go out on a new connection, with one host
/// as with several.
@Suite(.timeLimit(.minutes(2))) struct StalledConnectionTests {
    @Test func aFlushOnAConnectionThatStopsAnsweringIsClosedAndIngestGoesOnOnANewOne() async throws {
        // A server of its own: connections of the shared one left silent could hold up other
        // tests' statements there (dropping the test's database waits for their backends).
        try await PrivatePostgres.withServer { server in
            let database = server.database
            let direct = try #require(URLComponents(string: database.url))
            let proxy = try await StallProxy(targetPort: try #require(direct.port))
            var throughProxy = direct
            throughProxy.port = proxy.port
            let logs = LogCapture()
            var logger = logs.logger
            logger.logLevel = .info
            let client = DatabaseClient(endpoints: try DatabaseURL.endpoints(throughProxy.string!), logger: logger,
                                        checkInterval: .milliseconds(200))
            try await DatabaseClient.withRunning(client) { client in
                try await Migrator(client: client, logger: TestLogger.quiet).migrate()
                let store = PostgresEventStore(client: client, logger: TestLogger.quiet, ingestWait: .seconds(5))
                _ = try await store.ingest(FailoverTests.event("evt_before", user: "u-1"))

                try await proxy.silenceOpenConnections()
                // Answered at its wait (a 503 at the API), not held.
                await #expect(throws: (any Error).self) {
                    _ = try await store.ingest(FailoverTests.event("evt_silenced", user: "u-1"))
                }

                // The flush held past its limit drops the pool, silenced connections and all;
                // a new one takes the next ingest.
                let started = ContinuousClock.now
                var receipt: IngestReceipt?
                while receipt == nil, ContinuousClock.now - started < .seconds(20) {
                    receipt = try? await store.ingest(FailoverTests.event("evt_after", user: "u-1"))
                    if receipt == nil { try await Task.sleep(for: .milliseconds(100)) }  // a refusal can come at once
                }
                #expect(receipt != nil, "no ingest went through after the connection went silent:\n\(logs.text)")
                // The abandoned flush's successor may get a new connection of the same pool and
                // commit before the next host check (every 200 ms) drops the pool: wait for it.
                let checked = ContinuousClock.now
                while !logs.text.contains("a connection was held past its time limit"), ContinuousClock.now - checked < .seconds(5) {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(logs.text.contains("a connection was held past its time limit"))
            }
            #expect(try await database.count("events", where: "id = 'evt_before'") == 1)
        }
    }
}
