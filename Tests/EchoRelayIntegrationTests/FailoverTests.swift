import Crypto
import EchoRelayCore
import EchoRelayPostgres
import Foundation
import Logging
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// A database URL with two hosts, a primary and its synchronous streaming standby, each a real
/// PostgreSQL server of this test's own: the store writes to the primary whatever the order of
/// the hosts, refuses work while neither takes writes, and follows the standby once it is
/// promoted, with every acknowledged event there.
@Suite(.timeLimit(.minutes(3))) struct FailoverTests {
    static func event(_ id: String, user: String) -> IncomingEvent {
        IncomingEvent(
            id: id, type: .tokenRotated, userID: user, occurredAt: Date(timeIntervalSince1970: 1_800_000_000), phoneNumber: nil,
            echo: EchoCredentials(serviceProvider: "https://api.example.com/1.1/sdk/account.json", authorization: Secret("OAuth a=\"b\"")),
            fingerprint: Array(SHA256.hash(data: Data(id.utf8)))
        )
    }

    /// What the client said about its hosts, for a failure's message.
    static func hostLines(_ logs: LogCapture) -> String {
        logs.text.split(separator: "\n").filter { $0.contains("host") }.suffix(12).joined(separator: "\n")
    }

    /// The port of the server `client` sends its statements to.
    static func port(of client: DatabaseClient) async throws -> Int {
        var port = 0
        for try await value in try await client.query("SELECT inet_server_port()").decode(Int.self) { port = value }
        return port
    }

    /// A primary and its streaming standby, each a server of this test's own, durable, the
    /// standby synchronous: a commit returns once the standby has it, so "acknowledged"
    /// survives the primary.
    static func withSynchronousPair(_ body: @escaping @Sendable (PrivatePostgres, PrivatePostgres) async throws -> Void) async throws {
        try await PrivatePostgres.withServer(durable: true) { primary in
            try await primary.withStandby { standby in
                try await primary.database.withClient { admin in
                    try await admin.query("ALTER SYSTEM SET synchronous_standby_names = '*'", logger: TestLogger.quiet)
                    try await admin.query("SELECT pg_reload_conf()", logger: TestLogger.quiet)
                }
                // Within the suite's time limit, so that a hang fails the test (and the pair is
                // removed) rather than holding the run: the limit itself only cancels.
                try await within(.seconds(160), "the test's work on the pair") { try await body(primary, standby) }
            }
        }
    }

    /// A running client on `url`, the schema migrated, and a store on it. Its ingest waits well
    /// past the host check's (1 s apart, 2 s each), so that a loaded machine still sees a
    /// refusal come from a dropped host, not from the wait.
    /// Ingests event `id` of user u-1, again every 100 ms while no host takes writes (a
    /// standby being promoted), for up to 30 s; nil if it was never taken.
    static func ingestOnceWritable(_ store: PostgresEventStore, id: String) async throws -> IngestReceipt? {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(30) {
            if let receipt = try? await store.ingest(event(id, user: "u-1")) { return receipt }
            try await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    static func withStore(_ url: String, _ body: @Sendable (DatabaseClient, PostgresEventStore, LogCapture) async throws -> Void) async throws {
        let logs = LogCapture()
        let client = DatabaseClient(endpoints: try DatabaseURL.endpoints(url), logger: logs.logger,
                                    probeTimeout: .seconds(2), retryInterval: .milliseconds(100))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await Migrator(client: client, logger: TestLogger.quiet).migrate()
            try await body(client, PostgresEventStore(client: client, logger: TestLogger.quiet, ingestWait: .seconds(20)), logs)
        }
    }

    @Test func theStoreWritesToThePrimaryAndFollowsItsStandbyWhenPromotedLosingNothingAcknowledged() async throws {
        try await Self.withSynchronousPair { primary, standby in
            // The standby first: the client must pass over it.
            let url = "postgres://echorelay@127.0.0.1:\(standby.port),127.0.0.1:\(primary.port)/postgres?sslmode=disable"
            try await Self.withStore(url) { client, store, logs in
                #expect(try await Self.port(of: client) == primary.port)

                var acknowledged: [String: Int64] = [:]
                for index in 1...20 {
                    let receipt = try await store.ingest(Self.event("evt_before_\(index)", user: "u-\(index % 3)"))
                    acknowledged[receipt.id] = receipt.sequence
                }

                // The primary dies. Until the standby is promoted nothing takes writes:
                // every ingest is refused as unavailable (a 503), none is acknowledged.
                try await primary.crash()
                for attempt in 1...3 {
                    await #expect(throws: StoreError.self, "attempt \(attempt): \(Self.hostLines(logs))") {
                        _ = try await store.ingest(Self.event("evt_during_\(attempt)", user: "u-1"))
                    }
                }
                #expect(await store.readiness() != .ready)

                try await standby.promote()
                let after = try await Self.ingestOnceWritable(store, id: "evt_after")
                let receipt = try #require(after, "the store never wrote to the promoted standby: \(Self.hostLines(logs))")
                #expect(try await Self.port(of: client) == standby.port)

                // Every acknowledged event is there, with its sequence; the user's next
                // follows on without a gap (the refused ones took none).
                for (id, sequence) in acknowledged {
                    #expect(try await store.event(id: id)?.sequence == sequence, "\(id)")
                }
                let before = acknowledged.filter { $0.key.hasPrefix("evt_before_") }.count
                #expect(before == 20)
                let userOne = (1...20).filter { $0 % 3 == 1 }.count
                #expect(receipt.sequence == Int64(userOne + 1))
                for attempt in 1...3 {
                    #expect(try await store.event(id: "evt_during_\(attempt)") == nil)
                }
            }
        }
    }

    /// The same through `serve`'s HTTP API: `202` before, `503` with `Retry-After` and a
    /// `503` from `/readyz` while no host takes writes, `202` again after the promotion, and
    /// the stored receipt for an event pushed again.
    @Test func ingestAnswers503WithRetryAfterWhileNoHostTakesWritesAnd202AfterThePromotion() async throws {
        try await Self.withSynchronousPair { primary, standby in
            let url = "postgres://echorelay@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/postgres?sslmode=disable"
            try await LiveServer.run(ingestWait: .seconds(10), database: TestDatabase(url: url, name: "postgres")) { server in
                // Each step bounded, naming itself: this test once hung the suite between the
                // crash and the promotion, past its time limit, with nothing left to wake it.
                let first = eventBody(id: "evt_ha_1", userID: "u-ha")
                #expect(try await within(.seconds(40), "the first ingest") { try await server.ingest(first) }.status == 202)

                try await within(.seconds(130), "the crash of the primary") { try await primary.crash() }
                let during = try await within(.seconds(40), "the ingest while no host takes writes") {
                    try await server.ingest(eventBody(id: "evt_ha_2", userID: "u-ha"))
                }
                #expect(during.status == 503, "\(during.text)")
                #expect(during.headers["Retry-After"].first != nil)
                #expect(try await within(.seconds(40), "/readyz while no host takes writes") { try await server.http.get("/readyz") }.status == 503)

                try await within(.seconds(130), "the promotion of the standby") { try await standby.promote() }
                let status = try await within(.seconds(40), "ingesting again after the promotion") {
                    let promoted = ContinuousClock.now
                    var status = 0
                    while status != 202, ContinuousClock.now - promoted < .seconds(30) {
                        status = try await server.ingest(eventBody(id: "evt_ha_2", userID: "u-ha")).status
                        if status != 202 { try await Task.sleep(for: .milliseconds(100)) }
                    }
                    return status
                }
                #expect(status == 202, "no 202 within 30 s of the promotion")
                #expect(try await within(.seconds(40), "/readyz after the promotion") { try await server.http.get("/readyz") }.status == 200)
                let again = try await within(.seconds(40), "the first event pushed again") { try await server.ingest(first) }
                #expect(again.status == 202)
                #expect(again.json?["sequence"] as? Int == 1, "the receipt stored before the failover")
                let evt2 = try await within(.seconds(40), "reading the second event") {
                    try await server.http.get("/v1/events/evt_ha_2", bearer: LiveServer.adminToken)
                }.json
                #expect(evt2?["sequence"] as? Int == 2)
            }
        }
    }

    /// A primary that stops answering without closing anything (every process stopped): the
    /// statements stuck on it fail once the host check drops it, instead of holding the
    /// commits behind them forever, and the store follows the promoted standby.
    @Test func aPrimaryThatStopsAnsweringIsLeftForThePromotedStandby() async throws {
        try await Self.withSynchronousPair { primary, standby in
            let url = "postgres://echorelay@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/postgres?sslmode=disable"
            try await Self.withStore(url) { client, store, logs in
                _ = try await store.ingest(Self.event("evt_before", user: "u-1"))

                try await primary.freeze()
                // The first is stuck on the frozen server until the host is dropped; the
                // next finds no host that takes writes. Neither waits out its 20 s.
                for attempt in 1...2 {
                    let started = ContinuousClock.now
                    await #expect(throws: StoreError.self, "attempt \(attempt): \(Self.hostLines(logs))") {
                        _ = try await store.ingest(Self.event("evt_frozen_\(attempt)", user: "u-1"))
                    }
                    #expect(ContinuousClock.now - started < .seconds(15), "attempt \(attempt)")
                }

                try await standby.promote()
                let after = try await Self.ingestOnceWritable(store, id: "evt_after_freeze")
                #expect(after != nil, "the store never wrote to the promoted standby: \(Self.hostLines(logs))")
                #expect(try await Self.port(of: client) == standby.port)
            }
        }
    }
}
