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

/// EchoRelay's promise under faults, with real processes: an event acknowledged with `202` is
/// verified and delivered to every matching subscriber, in per-user order, whatever fails in
/// between. Each scenario prints a `FAULT …` line with its figures (RELIABILITY.md).
/// `ECHORELAY_FAULT_SCALE` (default 1) multiplies the load and the number of faults.
/// One scenario at a time: each starts several processes, and the timings mean most alone.
/// scripts/test runs this suite after the others, for the same reason.
@Suite(.serialized) struct FaultTests {
    static let scale = max(1, Int(ProcessInfo.processInfo.environment["ECHORELAY_FAULT_SCALE"] ?? "") ?? 1)

    @Test func serveKilledSeveralTimesUnderLoadLosesNothing() async throws {
        try await FaultLab.run { lab in
            let port = try freeLoopbackPort()
            var serve = try await lab.serve(port: port)
            try await lab.subscribe(through: port)
            // Paced so that the load spans every kill.
            let load = Task {
                try await pushLoad(ports: [port], provider: lab.provider, perUser: 12 * Self.scale, pause: .milliseconds(300))
            }
            for _ in 0..<(3 * Self.scale) {
                try await Task.sleep(for: .milliseconds(Int.random(in: 600...1500)))
                serve.signal(SIGKILL)
                _ = try await serve.wait()
                serve = try await lab.serve(port: port)
            }
            let report = try await load.value
            try await lab.waitUntilDelivered(report.acknowledged, within: .seconds(60))
            serve.signal(SIGTERM)
            #expect(try await serve.wait() == 0)
            try await lab.expectNothingLost("kill-9 x\(3 * Self.scale)", report)
        }
    }

    /// PostgreSQL stopped and started mid-load: `serve` reconnects by itself, is not ready
    /// and refuses ingest with 503 (never a false 202) while the database is away, and nothing
    /// acknowledged is lost.
    @Test func postgresStoppedAndStartedMidLoadLosesNothingAndNeverAcknowledgesFalsely() async throws {
        try await PrivatePostgres.withServer { postgres in
            try await FaultLab.run(database: postgres.database) { lab in
                let port = try freeLoopbackPort()
                let http = HTTPTestClient(port: port)
                // At info, so that a failure shows what serve went through (below).
                let serve = try await lab.serve(port: port, settings: ["ECHORELAY_LOG_LEVEL": "info"])
                try await lab.subscribe(through: port)
                let load = Task {
                    try await pushLoad(ports: [port], provider: lab.provider, perUser: 8 * Self.scale, pause: .milliseconds(250),
                                       within: .seconds(120))
                }
                try await Task.sleep(for: .seconds(1))
                try await postgres.stop()

                #expect(try await http.get("/readyz").status == 503)
                let outage = eventBody(id: "evt_during_outage", userID: FaultLab.users[0])
                let answer = try await http.send(.POST, "/v1/events", headers: try EventSigner(secret: LiveServer.ingestSecret).headers(for: outage),
                                                 body: outage)
                #expect(answer.status == 503, "\(answer.text)")
                try await Task.sleep(for: .seconds(2))
                try await postgres.start()

                let report = try await load.value
                #expect(report.refused > 0, "the load met the outage")
                let deadline = ContinuousClock.now + .seconds(30)
                while try await http.get("/readyz").status != 200, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(200))
                }
                #expect(try await http.get("/readyz").status == 200, "ready again without a restart")
                do {
                    try await lab.waitUntilDelivered(report.acknowledged, within: .seconds(60))
                } catch {
                    print("FAULT postgres-restart: serve's log after the failure below:\n\(serve.standardOutput.suffix(20_000))\n\(serve.standardError.suffix(5_000))")
                    throw error
                }
                serve.signal(SIGTERM)
                #expect(try await serve.wait() == 0)
                #expect(try await lab.storedStatuses()["evt_during_outage"] == nil, "refused with 503, so not stored")
                try await lab.expectNothingLost("postgres-restart", report)
            }
        }
    }

    /// A stop asked for while the database is away still ends the process: workers waiting
    /// for a connection give up instead of holding the stop until the database is back.
    @Test func sigtermWhileTheDatabaseIsAwayStillExits() async throws {
        try await PrivatePostgres.withServer { postgres in
            try await FaultLab.run(database: postgres.database) { lab in
                let port = try freeLoopbackPort()
                let serve = try await lab.serve(port: port)
                try await postgres.stop()
                try await Task.sleep(for: .seconds(1))
                let stopping = ContinuousClock.now
                serve.signal(SIGTERM)
                #expect(try await serve.wait(timeout: .seconds(30)) == 0)
                let stopTook = ContinuousClock.now - stopping
                #expect(stopTook < .seconds(15), "stopped in \(stopTook)")
                print("FAULT sigterm-database-away: stop took \(stopTook)")
                try await postgres.start()  // so that the lab can clean up
            }
        }
    }

    @Test func aSubscriberDownForAWhileGetsEverythingInOrderWhenItIsBack() async throws {
        try await FaultLab.run { lab in
            let port = try freeLoopbackPort()
            let serve = try await lab.serve(port: port)
            try await lab.subscribe(through: port)
            lab.subscriber.defaultAnswer = .status(503)
            let report = try await pushLoad(ports: [port], provider: lab.provider, perUser: 6 * Self.scale)
            try await Task.sleep(for: .seconds(2))  // down for a while: every first try fails
            #expect(!lab.subscriber.deliveries.isEmpty)
            lab.subscriber.clearDeliveries()
            lab.subscriber.defaultAnswer = .ok
            try await lab.waitUntilDelivered(report.acknowledged, within: .seconds(60))
            serve.signal(SIGTERM)
            #expect(try await serve.wait() == 0)
            try await lab.expectNothingLost("subscriber-down", report)
        }
    }

    /// One ingest process and two worker processes on one database: every item is worked by
    /// one of them at a time, so a healthy subscriber gets each event exactly once, in order.
    @Test func ingestAndTwoWorkerProcessesShareTheWorkWithoutDoingAnyTwice() async throws {
        // Generous timeouts: a slow answer on a loaded machine must not turn into a retry here.
        try await FaultLab.run(settings: ["ECHORELAY_ECHO_TIMEOUT": "5s", "ECHORELAY_DELIVERY_TIMEOUT": "5s",
                                          "ECHORELAY_LEASE": "15s"]) { lab in
            let ingestPort = try freeLoopbackPort()
            let ingest = try await lab.serve(port: ingestPort, role: "ingest")
            let workers = [try await lab.serve(port: try freeLoopbackPort(), role: "workers"),
                           try await lab.serve(port: try freeLoopbackPort(), role: "workers")]
            try await lab.subscribe(through: ingestPort)
            let report = try await pushLoad(ports: [ingestPort], provider: lab.provider, perUser: 10 * Self.scale, pause: .zero)
            try await lab.waitUntilDelivered(report.acknowledged, within: .seconds(60))
            try await Task.sleep(for: .milliseconds(500))  // a second copy, if any, would come now
            for process in [ingest] + workers { process.signal(SIGTERM) }
            for process in [ingest] + workers { #expect(try await process.wait() == 0) }

            let received = lab.subscriber.deliveries
            #expect(received.count == report.acknowledged.count, "each event once: \(received.count) for \(report.acknowledged.count)")
            #expect(lab.provider.requests.count == report.acknowledged.count, "each echo asked once")
            let leased = try await lab.database.count("deliveries", where: "lease_owner IS NOT NULL")
            #expect(leased == 0, "no lease is left behind after a clean stop")
            try await lab.expectNothingLost("ingest+2-workers", report)
        }
    }

    /// The same backlog drained by one, two and three worker processes, each allowed two
    /// deliveries and two echo requests at a time, against a subscriber that takes 50 ms to
    /// answer: the work is shared, so the drain rate grows with the processes. Prints the
    /// figures; asserts only that every event arrives exactly once (speed is not asserted).
    @Test func theDrainRateGrowsWithWorkerProcesses() async throws {
        for workerCount in 1...3 {
            try await FaultLab.run(settings: [
                "ECHORELAY_VERIFY_CONCURRENCY": "2", "ECHORELAY_DELIVERY_CONCURRENCY": "2",
                "ECHORELAY_ECHO_TIMEOUT": "5s", "ECHORELAY_DELIVERY_TIMEOUT": "5s", "ECHORELAY_LEASE": "15s",
            ]) { lab in
                let ingestPort = try freeLoopbackPort()
                let ingest = try await lab.serve(port: ingestPort, role: "ingest")
                try await lab.subscribe(through: ingestPort, ordered: false)
                lab.subscriber.defaultAnswer = .hang(.milliseconds(50))
                let report = try await pushLoad(ports: [ingestPort], provider: lab.provider, perUser: 30 * Self.scale, pause: .zero)

                let started = ContinuousClock.now
                var workers: [ChildProcess] = []
                for _ in 0..<workerCount { workers.append(try await lab.serve(port: try freeLoopbackPort(), role: "workers")) }
                try await lab.waitUntilDelivered(report.acknowledged, within: .seconds(120))
                let took = ContinuousClock.now - started
                for process in [ingest] + workers { process.signal(SIGTERM) }
                for process in [ingest] + workers { #expect(try await process.wait() == 0) }

                #expect(lab.subscriber.deliveries.count == report.acknowledged.count, "each event once")
                let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
                print("FAULT throughput workers=\(workerCount): \(report.acknowledged.count) events verified and delivered in "
                      + String(format: "%.2f s (%.0f events/s, process starts included)", seconds, Double(report.acknowledged.count) / seconds))
            }
        }
    }

    /// SIGTERM with deliveries in flight: the process finishes or hands back what it holds and
    /// exits in bounded time; another process takes the work at once, not after the lease.
    @Test func sigtermReleasesWhatItHoldsAndExitsInBoundedTime() async throws {
        try await FaultLab.run(settings: ["ECHORELAY_LEASE": "60s", "ECHORELAY_DELIVERY_TIMEOUT": "20s",
                                          "ECHORELAY_SHUTDOWN_GRACE": "2s"]) { lab in
            let port = try freeLoopbackPort()
            let first = try await lab.serve(port: port)
            try await lab.subscribe(through: port)
            lab.subscriber.defaultAnswer = .hang(.seconds(30))  // every delivery stays in flight
            let report = try await pushLoad(ports: [port], provider: lab.provider, perUser: 2)
            _ = try await lab.subscriber.waitForDeliveries(count: FaultLab.users.count, within: .seconds(20))

            let stopping = ContinuousClock.now
            first.signal(SIGTERM)
            #expect(try await first.wait(timeout: .seconds(30)) == 0)
            let stopTook = ContinuousClock.now - stopping
            #expect(stopTook < .seconds(12), "stopped in \(stopTook): the 2 s grace, not the 20 s delivery timeout")
            let held = try await lab.database.count("deliveries", where: "status = 'pending' AND lease_owner IS NOT NULL")
            #expect(held == 0, "leases released at shutdown")

            lab.subscriber.clearDeliveries()
            lab.subscriber.defaultAnswer = .ok
            let taking = ContinuousClock.now
            let second = try await lab.serve(port: port)
            try await lab.waitUntilDelivered(report.acknowledged, within: .seconds(20))
            #expect(ContinuousClock.now - taking < .seconds(30), "taken over well before the 60 s lease")
            second.signal(SIGTERM)
            #expect(try await second.wait() == 0)
            try await lab.expectNothingLost("sigterm", report)
            print("FAULT sigterm: stop took \(stopTook)")
        }
    }
}
