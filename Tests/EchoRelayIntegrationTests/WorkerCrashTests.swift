import EchoRelayCore
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Work lives in the database: a `serve` process killed in the middle of an echo request
/// loses its lease, and another process finishes the event once the lease runs out.
@Suite struct WorkerCrashTests {
    @Test func aWorkerKilledMidItemIsFinishedByAnotherAfterTheLease() async throws {
        let provider = StandInProvider()
        provider.addConsumer(key: EchoFixture.consumerKey, secret: EchoFixture.consumerSecret)
        provider.addAccount(userID: "4242", phoneNumber: nil)
        let session = provider.issueToken(for: "4242")
        try await provider.run { provider in
            try await TestDatabase.withFresh { database in
                let environment = EchoFixture.serveEnvironment(database: database, providerHost: provider.host).merging([
                    "ECHORELAY_ECHO_TIMEOUT": "2s", "ECHORELAY_DELIVERY_TIMEOUT": "2s", "ECHORELAY_LEASE": "3s",
                ]) { _, new in new }
                provider.setMode(.hang)
                let firstPort = try freeLoopbackPort()
                let first = try ChildProcess(["serve", "--port", String(firstPort)], environment: environment)
                let firstHTTP = HTTPTestClient(port: firstPort)
                try await first.waitUntilAnswering(firstHTTP)

                let url = provider.digitsURL
                let header = try OAuth1.authorizationHeader(
                    method: "GET", url: url, consumerKey: EchoFixture.consumerKey, consumerSecret: EchoFixture.consumerSecret,
                    token: session.token, tokenSecret: session.secret, nonce: "n1", timestamp: String(Int(Date().timeIntervalSince1970))
                )
                let body = eventBody(id: "evt_crash", userID: "4242") { $0["echo"] = ["service_provider": url, "authorization": header] }
                let signer = EventSigner(secret: LiveServer.ingestSecret)
                #expect(try await firstHTTP.send(.POST, "/v1/events", headers: try signer.headers(for: body), body: body).status == 202)

                // Wait until the first process is mid-request, then kill it without warning.
                let deadline = ContinuousClock.now + .seconds(20)
                while provider.requests.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
                #expect(provider.requests.count == 1)
                first.signal(SIGKILL)
                try await first.wait()
                provider.setMode(.normal)

                let secondPort = try freeLoopbackPort()
                let second = try ChildProcess(["serve", "--port", String(secondPort)], environment: environment)
                defer { second.signal(SIGKILL) }
                let secondHTTP = HTTPTestClient(port: secondPort)
                try await second.waitUntilAnswering(secondHTTP)

                var status = "pending"
                let finishDeadline = ContinuousClock.now + .seconds(30)
                while status == "pending", ContinuousClock.now < finishDeadline {
                    status = try await secondHTTP.get("/v1/events/evt_crash", bearer: LiveServer.adminToken).json?["status"] as? String ?? "pending"
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(status == "verified")
                // At least once more: on a loaded machine an echo call can outlast the 2 s echo
                // timeout and be retried, which is the worker's job, not a second verification.
                #expect(provider.requests.count >= 2, "the second process asked the provider once more")
            }
        }
    }

    /// A bulk replay's cursor lives in the database: a `serve` killed mid-replay leaves it
    /// half sent, and the next process finishes it, in per-user order.
    ///
    /// The kill's moment is made certain rather than raced against the replay's pace (on a
    /// busy machine all six were once sent before the kill): a trigger the test adds to this
    /// test's database makes the transaction that would create the third replayed delivery
    /// wait for an advisory lock the test holds. The test kills the process while that
    /// transaction waits, so two are sent and four left, on a machine of any speed; then it
    /// lets go (the dead process's transaction is rolled back), drops the trigger, and starts
    /// the second process on the database as EchoRelay left it.
    @Test func aBulkReplayInterruptedByAKillFinishesAfterARestart() async throws {
        let provider = StandInProvider()
        provider.addConsumer(key: EchoFixture.consumerKey, secret: EchoFixture.consumerSecret)
        provider.addAccount(userID: "u-restart", phoneNumber: nil)
        let session = provider.issueToken(for: "u-restart")
        try await provider.run { provider in
            try await StandInSubscriber().run { subscriber in
                try await TestDatabase.withFresh { database in
                    let environment = EchoFixture.serveEnvironment(database: database, providerHost: provider.host).merging([
                        // Batches of one (a tenth of the rate, at least one): each replayed
                        // delivery is created in a transaction of its own.
                        "ECHORELAY_REPLAY_RATE": "2",
                        "ECHORELAY_ECHO_TIMEOUT": "2s", "ECHORELAY_DELIVERY_TIMEOUT": "2s", "ECHORELAY_LEASE": "3s",
                        // A delivery that times out on a loaded machine is tried again soon,
                        // not after the default schedule's 5 s and then 5 min.
                        "ECHORELAY_RETRY_SCHEDULE": "200ms,500ms,1s,1s,1s,1s,1s,1s,1s,1s",
                    ]) { _, new in new }
                    let admin = [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")]
                    let firstPort = try freeLoopbackPort()
                    let first = try ChildProcess(["serve", "--port", String(firstPort)], environment: environment)
                    let firstHTTP = HTTPTestClient(port: firstPort)
                    try await first.waitUntilAnswering(firstHTTP)

                    let subscription = try await firstHTTP.send(.POST, "/v1/subscriptions", headers: admin, body: Array(
                        try JSONSerialization.data(withJSONObject: ["url": subscriber.url(), "event_types": ["token.rotated"]])
                    ))
                    subscriber.setSecrets([try #require(subscription.json?["secret"] as? String)])
                    let signer = EventSigner(secret: LiveServer.ingestSecret)
                    for index in 0..<6 {
                        let header = try OAuth1.authorizationHeader(
                            method: "GET", url: provider.digitsURL, consumerKey: EchoFixture.consumerKey,
                            consumerSecret: EchoFixture.consumerSecret, token: session.token, tokenSecret: session.secret,
                            nonce: "n\(index)", timestamp: String(Int(Date().timeIntervalSince1970))
                        )
                        let body = eventBody(id: "evt_restart_\(index)", userID: "u-restart") {
                            $0["echo"] = ["service_provider": provider.digitsURL, "authorization": header]
                        }
                        #expect(try await firstHTTP.send(.POST, "/v1/events", headers: try signer.headers(for: body), body: body).status == 202)
                    }
                    // Limits from here on are hang guards only: each wait ends as soon as its
                    // condition holds.
                    _ = try await subscriber.waitForDeliveries(count: 6, within: .seconds(120))
                    subscriber.clearDeliveries()

                    // The subscriber has them; wait until serve has recorded them too.
                    let countDeadline = ContinuousClock.now + .seconds(60)
                    while ContinuousClock.now < countDeadline {
                        let dryRun = try await firstHTTP.send(.POST, "/v1/replays", headers: admin, body: Array(
                            try JSONSerialization.data(withJSONObject: ["reason": "count", "user_id": "u-restart", "dry_run": true])
                        ))
                        if dryRun.json?["matched"] as? Int == 6 { break }
                        try await Task.sleep(for: .milliseconds(50))
                    }

                    let (replayID, sentBeforeKill) = try await database.withClient { client -> (String, Int) in
                        try await Self.holdingReplaysAfter(2, client: client) { held in
                            let started = try await firstHTTP.send(.POST, "/v1/replays", headers: admin, body: Array(
                                try JSONSerialization.data(withJSONObject: ["reason": "restart test", "user_id": "u-restart"])
                            ))
                            #expect(started.json?["matched"] as? Int == 6)
                            let replayID = try #require(started.json?["id"] as? String)
                            // The third replayed delivery's transaction waits on the test: kill now.
                            try await held(.seconds(120))
                            first.signal(SIGKILL)
                            try await first.wait()
                            for try await sent in try await client.query("SELECT sent FROM replays WHERE id = \(replayID)").decode(Int.self) {
                                return (replayID, sent)
                            }
                            return (replayID, -1)
                        }
                    }
                    #expect(sentBeforeKill == 2, "the replay was cut off half way: two sent, four left")

                    let secondPort = try freeLoopbackPort()
                    let second = try ChildProcess(["serve", "--port", String(secondPort)], environment: environment)
                    defer { second.signal(SIGKILL) }
                    let secondHTTP = HTTPTestClient(port: secondPort)
                    try await second.waitUntilAnswering(secondHTTP)

                    var replay: [String: Any] = [:]
                    let deadline = ContinuousClock.now + .seconds(120)
                    while replay["state"] as? String != "completed", ContinuousClock.now < deadline {
                        replay = try await secondHTTP.get("/v1/replays/\(replayID)", bearer: LiveServer.adminToken).json ?? [:]
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    #expect(replay["state"] as? String == "completed", "the second serve's errors: \(second.standardError.suffix(3000))")
                    #expect(replay["sent"] as? Int == 6)
                    #expect(replay["delivered"] as? Int == 6)
                    let received = subscriber.deliveries
                    #expect(received.allSatisfy { $0.object?["replay"]?.objectValue?["id"]?.stringValue == replayID })
                    // At least once: a send cut off by the kill may come again, but never out of order.
                    var sequences = DeliveryTests.sequences(received, user: "u-restart")
                    sequences = sequences.enumerated().filter { $0.offset == 0 || sequences[$0.offset - 1] != $0.element }.map(\.element)
                    #expect(sequences == [1, 2, 3, 4, 5, 6])
                }
            }
        }
    }

    /// An advisory lock key of this test's own: no EchoRelay statement takes advisory locks.
    static let replayGate: Int64 = 0x5EC_0DE_11

    /// Runs `body` while any transaction that creates a replayed delivery beyond the first
    /// `count` of its replay waits: a trigger on `deliveries` takes a shared advisory lock
    /// that the test holds exclusively on a connection of its own. `body` is given a function
    /// that returns once such a transaction is waiting (or throws after `limit`). Afterwards
    /// the lock is let go and the trigger dropped, whatever happened.
    static func holdingReplaysAfter<Result: Sendable>(
        _ count: Int, client: PostgresClient,
        _ body: (_ held: (_ limit: Duration) async throws -> Void) async throws -> Result
    ) async throws -> Result {
        try await client.query("""
            CREATE FUNCTION test_hold_replayed_deliveries() RETURNS trigger LANGUAGE plpgsql AS $hold$
            BEGIN
                IF (SELECT count(*) FROM deliveries WHERE replay_id = NEW.replay_id) >= \(unescaped: String(count)) THEN
                    PERFORM pg_advisory_xact_lock_shared(\(unescaped: String(replayGate)));
                END IF;
                RETURN NEW;
            END
            $hold$
            """)
        try await client.query("""
            CREATE TRIGGER test_hold_replayed_deliveries BEFORE INSERT ON deliveries
            FOR EACH ROW WHEN (NEW.replay_id IS NOT NULL) EXECUTE FUNCTION test_hold_replayed_deliveries()
            """)
        func drop() async throws {
            try await client.query("DROP TRIGGER test_hold_replayed_deliveries ON deliveries")
            try await client.query("DROP FUNCTION test_hold_replayed_deliveries()")
        }
        do {
            let result = try await client.withConnection { gate in
                try await gate.query("SELECT pg_advisory_lock(\(unescaped: String(replayGate)))", logger: TestLogger.quiet)
                do {
                    let result = try await body { limit in
                        let deadline = ContinuousClock.now + limit
                        while try await client.count("pg_locks", where: """
                            locktype = 'advisory' AND NOT granted AND objid = \(replayGate)
                            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                            """) == 0 {
                            guard ContinuousClock.now < deadline else {
                                throw TestSetupError("no replayed delivery waited on the test within \(limit)")
                            }
                            try await Task.sleep(for: .milliseconds(20))
                        }
                    }
                    try await gate.query("SELECT pg_advisory_unlock(\(unescaped: String(replayGate)))", logger: TestLogger.quiet)
                    return result
                } catch {
                    _ = try? await gate.query("SELECT pg_advisory_unlock(\(unescaped: String(replayGate)))", logger: TestLogger.quiet)
                    throw error
                }
            }
            try await drop()
            return result
        } catch {
            try? await drop()
            throw error
        }
    }
}
