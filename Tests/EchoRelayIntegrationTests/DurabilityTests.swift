import EchoRelayCore
import EchoRelayPostgres
import EchoRelayStandIns
import Foundation
import Logging
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// `ECHORELAY_DURABILITY=standby` on a real primary and its streaming standby (asynchronous, so
/// that nothing but EchoRelay's own check holds a commit back): a `202`, and any change
/// acknowledged through the API, comes only while a standby holds it; with the standby
/// stopped the answer is `503` with `Retry-After`, never `202`, and the provider's retry of the
/// same id is acknowledged, with the first receipt, once the standby is back.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DurabilityTests {
    /// Whether the row `id` of `events` can be read on `server` (a hot standby), within `limit`:
    /// a standby replays what it has flushed a moment later.
    static func holds(_ server: PrivatePostgres, event id: String, within limit: Duration = .seconds(10)) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while true {
            let count = try await server.database.withClient { client in
                try await client.query("SELECT count(*) FROM events WHERE id = \(id)").decode(Int.self).first(where: { _ in true }) ?? 0
            }
            if count == 1 { return true }
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Until the primary lists no standby: a stopped standby's WAL sender ends a moment after.
    static func waitUntilAlone(_ primary: PrivatePostgres) async throws {
        try await within(.seconds(20), "the primary to notice its standby stopped") {
            while try await primary.database.withClient({ client in
                try await client.query("SELECT count(*) FROM pg_stat_replication").decode(Int.self).first(where: { _ in true }) ?? 0
            }) > 0 {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    static let admin = [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")]

    @Test func standbyDurabilityAcknowledgesOnlyWhatAStandbyHolds() async throws {
        try await PrivatePostgres.withServer(durable: true) { primary in
            try await primary.withStandby { standby in
                try await FaultLab.run(settings: ["ECHORELAY_DURABILITY": "standby"], database: primary.database) { lab in
                    let port = try freeLoopbackPort()
                    let serve = try await lab.serve(port: port)
                    let http = HTTPTestClient(port: port)

                    let first = try await lab.push(try lab.event("evt_durable_1"), to: port)
                    #expect(first.status == 202, "\(first.text)")
                    #expect(try await Self.holds(standby, event: "evt_durable_1"), "a 202 means the standby has it")
                    try await lab.subscribe(through: port)

                    try await standby.stop()
                    try await Self.waitUntilAlone(primary)
                    let second = try lab.event("evt_durable_2")
                    for attempt in 1...3 {
                        let refused = try await lab.push(second, to: port)
                        #expect(refused.status == 503, "attempt \(attempt): \(refused.text)")
                        #expect(refused.headers["Retry-After"].first == "2")
                        #expect(refused.text.contains("no streaming standby"), "\(refused.text)")
                    }
                    // Every other acknowledged change waits for the same: a subscription, a
                    // replay, a token.
                    let subscription = try await http.send(.POST, "/v1/subscriptions", headers: Self.admin, body: Array(#"""
                        {"url": "\#(lab.subscriber.url())", "event_types": ["token.rotated"]}
                        """#.utf8))
                    #expect(subscription.status == 503, "\(subscription.text)")
                    let replay = try await http.send(.POST, "/v1/events/evt_durable_1/replay", headers: Self.admin,
                                                     body: Array(#"{"reason": "durability check"}"#.utf8))
                    #expect(replay.status == 503, "\(replay.text)")
                    let token = try await http.send(.POST, "/v1/tokens", headers: Self.admin,
                                                    body: Array(#"{"name": "durability check", "role": "support"}"#.utf8))
                    #expect(token.status == 503, "\(token.text)")
                    #expect(token.json?["token"] == nil, "no token is shown for a change no standby holds")
                    // Reads are not held back.
                    #expect(try await http.get("/v1/events/evt_durable_1", bearer: LiveServer.adminToken).status == 200)

                    // A serve with the default durability acknowledges the same outage: what
                    // `standby` is for.
                    let localPort = try freeLoopbackPort()
                    let local = try await lab.serve(port: localPort, settings: ["ECHORELAY_DURABILITY": "local"])
                    #expect(try await lab.push(try lab.event("evt_durable_local"), to: localPort).status == 202)
                    local.signal(SIGTERM)
                    _ = try await local.wait()

                    try await standby.start()
                    // The provider's retry of the same id, until it is acknowledged: the first
                    // receipt (its sequence), and the standby has it.
                    let retried = try await within(.seconds(30), "a 202 once the standby is back") {
                        while true {
                            let answer = try await lab.push(second, to: port)
                            if answer.status == 202 { return answer }
                            #expect(answer.status == 503, "\(answer.text)")
                            try await Task.sleep(for: .milliseconds(200))
                        }
                    }
                    #expect(retried.json?["id"] as? String == "evt_durable_2")
                    #expect(try await Self.holds(standby, event: "evt_durable_2"))
                    #expect(try await http.send(.POST, "/v1/tokens", headers: Self.admin,
                                                body: Array(#"{"name": "durability check", "role": "support"}"#.utf8)).status == 201)
                    serve.signal(SIGTERM)
                    #expect(try await serve.wait() == 0)
                }
            }
        }
    }

    /// The role needs `pg_monitor` to see its standbys' positions; without it the refusal says
    /// which grant is missing rather than waiting for a confirmation that cannot come.
    @Test func aRoleThatCannotSeeItsStandbysIsToldWhichGrantItNeeds() async throws {
        try await PrivatePostgres.withServer(durable: true) { primary in
            try await primary.withStandby { _ in
                try await primary.database.withClient { client in
                    try await client.query("CREATE ROLE durability_check LOGIN")
                }
                let url = "postgres://durability_check@127.0.0.1:\(primary.port)/postgres?sslmode=disable"
                try await Self.withStore(url) { store in
                    let error = await #expect(throws: StandbyUnconfirmed.self) { try await store.confirmDurable() }
                    #expect(error?.reason.contains("GRANT pg_monitor") == true, "\(String(describing: error))")
                }
                try await primary.database.withClient { client in
                    try await client.query("GRANT pg_monitor TO durability_check")
                }
                try await Self.withStore(url) { store in try await store.confirmDurable() }
            }
        }
    }

    /// The embedded store has no standby: `standby` is refused at start, before the file is
    /// made, as is a value that is neither.
    @Test(arguments: [
        ("standby", "ECHORELAY_DURABILITY (--durability): standby waits for a PostgreSQL standby to hold each commit, and the embedded store has none"),
        ("replicated", "ECHORELAY_DURABILITY (--durability): must be local or standby, got \"replicated\""),
    ])
    func theEmbeddedStoreRefusesWhatItCannotPromise(value: String, expected: String) async throws {
        for (arguments, environment) in [(["--durability", value], [String: String]()), ([], ["ECHORELAY_DURABILITY": value])] {
            try await EmbeddedServeTests.withFolder { folder in
                let result = try await ChildProcess.run(["serve", "--demo"] + arguments, environment: environment, workingDirectory: folder)
                #expect(result.status != 0)
                #expect(result.stderr.contains(expected), "\(result.stderr)")
                #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("echorelay.sqlite").path))
            }
        }
    }

    static func withStore(_ url: String, _ body: @Sendable (PostgresEventStore) async throws -> Void) async throws {
        let client = DatabaseClient(endpoints: try DatabaseURL.endpoints(url), logger: TestLogger.quiet)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await body(PostgresEventStore(client: client, logger: TestLogger.quiet, ingestWait: .seconds(5), durability: .standby))
        }
    }
}
