import EchoRelayCore
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Polling with several `serve` processes on one PostgreSQL database: one polls at a time, and
/// when it is killed with `-9` between recording a batch and acknowledging it, another takes
/// the poller's lock, gets the same SETs again, and their `jti` keys make the copies harmless.
@Suite struct SharedSignalsPollCrashTests {
    typealias Poll = SharedSignalsPollTests

    /// Waits until `process` reports polling (only the poller has the poll age series).
    static func polls(_ http: HTTPTestClient) async throws -> Bool {
        try await http.get("/metrics").text.contains("echorelay_set_poll_last_success_age_seconds")
    }

    @Test func aPollerKilledBetweenAPollAndItsAckLosesNothingAndDeliversEachSetOnce() async throws {
        let provider = StandInProvider()
        // The transmitter holds an empty poll far longer than the test takes to set its outage
        // and enqueue the batch, so the batch comes in the poll already held, before the outage.
        let transmitter = try await SSFTransmitter(token: Poll.token, longPollWait: 30)
        try await provider.run { provider in
            try await TestDatabase.withFresh { database in
                try await StandInSubscriber().run { subscriber in
                    let environment = EchoFixture.serveEnvironment(database: database, providerHost: provider.host).merging([
                        "ECHORELAY_LEASE": "3s", "ECHORELAY_DELIVERY_TIMEOUT": "2s", "ECHORELAY_ECHO_TIMEOUT": "2s",
                        "ECHORELAY_SET_ISSUER": transmitter.issuer, "ECHORELAY_SET_AUDIENCE": transmitter.audience,
                        "ECHORELAY_SET_ALLOW_HTTP": "1", "ECHORELAY_SET_POLL_URL": transmitter.defaultPollURL,
                        "ECHORELAY_SET_POLL_TOKEN": Poll.token, "ECHORELAY_SET_POLL_WAIT": "45s",
                    ]) { _, new in new }
                    var processes: [(child: ChildProcess, http: HTTPTestClient)] = []
                    for _ in 0 ..< 2 {
                        let port = try freeLoopbackPort()
                        let child = try ChildProcess(["serve", "--port", String(port)], environment: environment)
                        let http = HTTPTestClient(port: port)
                        try await child.waitUntilAnswering(http)
                        processes.append((child, http))
                    }
                    defer { for process in processes { process.child.signal(SIGKILL) } }
                    let created = try await processes[0].http.send(.POST, "/v1/subscriptions", headers: [
                        ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
                    ], body: Array(try JSONSerialization.data(withJSONObject: [
                        "url": subscriber.url(), "event_types": ["token.rotated", "account.deactivated"],
                    ])))
                    subscriber.setSecrets([try #require(created.json?["secret"] as? String)])

                    // One process polls; the other waits for the lock.
                    let deadline = ContinuousClock.now + .seconds(20)
                    var poller: Int?
                    while poller == nil, ContinuousClock.now < deadline {
                        for (index, process) in processes.enumerated() where try await Self.polls(process.http) { poller = index }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    let polling = try #require(poller, "no process polls")
                    let other = 1 - polling
                    #expect(try await !Self.polls(processes[other].http), "two processes poll at once")

                    // The poll that would carry the acks fails, so the batch is recorded but never
                    // acknowledged; the poll held open before the outage carries the batch.
                    while try await Poll.polls(transmitter).isEmpty, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    try await transmitter.outage(100_000, status: 503)
                    let jtis = try await transmitter.enqueue((1 ... 4).map { index in
                        SETSpec(index == 4 ? SETSpec.risc + "sessions-revoked" : SETSpec.caep + "credential-change",
                                event: index == 4 ? [:] : ["credential_type": "password", "change_type": "update"],
                                subID: Poll.user(transmitter, "u-crash"), jti: "crash-\(index)")
                    })
                    let received = try await subscriber.waitForDeliveries(count: 4, within: .seconds(30))
                    // Every delivery is recorded delivered before the kill, so none is retried for its own sake.
                    let sets = try #require(try await processes[other].http.get("/v1/sets?limit=100", bearer: LiveServer.adminToken)
                        .json?["security_events"] as? [[String: Any]])
                    for eventID in sets.compactMap({ $0["event_id"] as? String }) {
                        var status = ""
                        while status != "delivered", ContinuousClock.now < deadline + .seconds(20) {
                            let event = try await processes[other].http.get("/v1/events/\(eventID)", bearer: LiveServer.adminToken).json
                            status = ((event?["deliveries"] as? [[String: Any]])?.first?["status"] as? String) ?? ""
                            try await Task.sleep(for: .milliseconds(50))
                        }
                    }
                    #expect(try await transmitter.acked().isEmpty, "nothing was acknowledged before the kill")
                    processes[polling].child.signal(SIGKILL)
                    try await processes[polling].child.wait()
                    try await transmitter.outage(0)

                    // The other process takes the lock, gets the batch again and acknowledges it.
                    let acked = try await Poll.waitForAcks(jtis, transmitter, within: .seconds(40))
                    #expect(jtis.allSatisfy { acked[$0] == 1 }, "\(acked)")
                    #expect(try await Self.polls(processes[other].http))
                    try await Task.sleep(for: .seconds(1))
                    let all = subscriber.deliveries.compactMap(\.object)
                    #expect(all.count == 4, "each SET delivered once: \(all.map { $0["event_id"]?.stringValue ?? "" })")
                    #expect(Set(all.compactMap { $0["event_id"]?.stringValue }).count == 4)
                    #expect(received.compactMap { $0.object?["sequence"] } == [.integer(1), .integer(2), .integer(3), .integer(4)])
                    let recorded = try #require(try await processes[other].http.get("/v1/sets?limit=100", bearer: LiveServer.adminToken)
                        .json?["security_events"] as? [[String: Any]])
                    #expect(recorded.count == 4, "the second copies recorded nothing new")
                }
            }
        }
    }
}
