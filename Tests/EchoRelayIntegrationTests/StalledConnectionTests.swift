import EchoRelayCore
import EchoRelayQueue
@testable import EchoRelayPostgres
import Foundation
import Logging
import PostgresNIO
import Testing
import TestSupport

/// A database connection that stops answering without closing (a frozen server, a network
/// path that drops packets) must not hold the ingest committer, and every request queued
/// behind it, until TCP gives up hours later: past the flush's limit the host's connections are
/// closed and its pool replaced, and later ingests go out on a new connection, with one host
/// as with several. A statement that is never answered fails too, instead of holding its
/// caller.
///
/// One test at a time: each starts a PostgreSQL server of its own, and four at once weigh on
/// the rest of the suite's timing on 2 cores.
@Suite(.serialized, .timeLimit(.minutes(2))) struct StalledConnectionTests {
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

    /// A statement that is never answered fails at the statement limit instead of holding its
    /// caller for ever, and its host's pool is replaced, so the next statement goes out on a new
    /// connection. postgres-nio loses a statement written to a connection that had just closed,
    /// which happens during a failover; here the server stops answering instead.
    @Test func aStatementNeverAnsweredFailsAtTheLimitAndTheNextGoesOnANewConnection() async throws {
        try await withSilencedConnections(query: "", statementLimit: .seconds(2)) { client, _, logs in
            let answer = await awaitResult(within: .seconds(20)) { try await client.query("SELECT 1") }
            #expect(Self.isUnavailable(answer), "the statement's answer: \(answer)")
            #expect(logs.text.contains("giving up statements that the database never answered"))
            #expect(logs.text.contains("a statement was not answered within 2s"))
            let goesOn = try await Self.answersSoon(client)
            #expect(goesOn, "no statement went through on a new connection:\n\(logs.text)")
        }
    }

    /// A statement lost on a connection that had closed never answers, even once its
    /// connection's pool is closed: when its host is dropped (here its check stops answering),
    /// it fails within moments, not at the statement limit. After a pg_auto_failover failover
    /// the delivery worker's claim had waited on the old primary's pool, and nothing was
    /// delivered again. (A send that never returns stands for the lost statement.)
    @Test func aLostStatementOnADroppedHostsPoolFailsSoon() async throws {
        try await withSilencedConnections(query: "target_session_attrs=read-write", statementLimit: .seconds(60), silenceFirst: false) { client, proxy, logs in
            let (index, pool) = try await client.host()
            let lost = Task { await awaitResult(within: .seconds(20)) { try await client.answered(index, pool) { try await Task.sleep(for: .seconds(600)) } } }
            try await Task.sleep(for: .milliseconds(200))
            try await proxy.silenceOpenConnections()
            let answer = await lost.value
            #expect(Self.isUnavailable(answer), "the lost statement's answer: \(answer)")
            #expect(logs.text.contains("dropped the database host"))
            let goesOn = try await Self.answersSoon(client)
            #expect(goesOn, "no statement went through on a new connection:\n\(logs.text)")
        }
    }

    /// A caller cancelled while its statement waits for a connection (the database away)
    /// gets its answer at once, as when it sent the statement itself: a graceful stop of serve
    /// cancels its workers' store calls and must not wait for the statement limit.
    @Test func aCallerCancelledWhileTheDatabaseIsAwayIsAnsweredAtOnce() async throws {
        try await PrivatePostgres.withServer { server in
            let logs = LogCapture()
            let client = DatabaseClient(endpoints: try DatabaseURL.endpoints(server.database.url), logger: logs.logger)
            try await DatabaseClient.withRunning(client) { client in
                #expect(try await Self.answersSoon(client))
                try await server.stop()
                let waiting = Task { try await client.query("SELECT 1") }
                try await Task.sleep(for: .milliseconds(300))
                waiting.cancel()
                let answer = await awaitResult(within: .seconds(10)) { try await waiting.value }
                guard case .failure(let error) = answer else { Issue.record("a statement went through with the database away"); return }
                #expect(!(error is TimeoutError), "the cancelled caller was still waiting after 10 s")
                try await server.start()
            }
        }
    }

    /// Runs `body` with a client through a proxy whose connections, open once a statement has
    /// gone through, stop answering (at once, or when `body` says).
    private func withSilencedConnections(
        query: String, statementLimit: Duration, silenceFirst: Bool = true,
        _ body: @Sendable (DatabaseClient, StallProxy, LogCapture) async throws -> Void
    ) async throws {
        try await PrivatePostgres.withServer { server in
            let direct = try #require(URLComponents(string: server.database.url))
            let proxy = try await StallProxy(targetPort: try #require(direct.port))
            var throughProxy = direct
            throughProxy.port = proxy.port
            if !query.isEmpty { throughProxy.query = [throughProxy.query, query].compactMap { $0 }.joined(separator: "&") }
            let logs = LogCapture()
            var logger = logs.logger
            logger.logLevel = .info
            let client = DatabaseClient(endpoints: try DatabaseURL.endpoints(throughProxy.string!), logger: logger,
                                        probeTimeout: .milliseconds(500), checkInterval: .milliseconds(200),
                                        statementLimit: statementLimit)
            try await DatabaseClient.withRunning(client) { client in
                #expect(try await Self.answersSoon(client))
                if silenceFirst { try await proxy.silenceOpenConnections() }
                try await body(client, proxy, logs)
            }
        }
    }

    private static func isUnavailable<Value>(_ answer: Result<Value, any Error>) -> Bool {
        guard case .failure(let error) = answer, case .unavailable? = error as? StoreError else { return false }
        return true
    }

    /// Whether `SELECT 1` is answered within 10 s, trying again after failures.
    private static func answersSoon(_ client: DatabaseClient) async throws -> Bool {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(10) {
            let answer = await awaitResult(within: .seconds(5)) {
                var one = 0
                for try await value in try await client.query("SELECT 1").decode(Int.self) { one = value }
                return one
            }
            if case .success(1) = answer { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }
}
