import EchoRelayCore
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import PostgresNIO
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// One fault scenario's world: a fresh PostgreSQL database, a stand-in provider that
/// confirms every session, a stand-in subscriber with an ordered subscription, and real
/// `serve` processes started, killed and stopped at will.
struct FaultLab: Sendable {
    /// Where the lab reads what was stored (a scenario that moves the primary points it at the new one).
    var database: TestDatabase
    let provider: StandInProvider
    let subscriber: StandInSubscriber
    let environment: [String: String]

    static let users = ["fault-a", "fault-b", "fault-c", "fault-d"]

    /// Runs `body` in a fresh lab; `settings` are added to every `serve`'s environment. The
    /// database is a fresh one on the shared test server unless one is given.
    static func run(settings: [String: String] = [:], database given: TestDatabase? = nil,
                    _ body: @Sendable (FaultLab) async throws -> Void) async throws {
        let provider = StandInProvider()
        provider.addConsumer(key: EchoFixture.consumerKey, secret: EchoFixture.consumerSecret)
        for user in users { provider.addAccount(userID: user, phoneNumber: nil) }
        try await provider.run { provider in
            try await StandInSubscriber().run { subscriber in
                @Sendable func inDatabase(_ database: TestDatabase) async throws {
                    let environment = EchoFixture.serveEnvironment(database: database, providerHost: provider.host).merging([
                        // A short lease, so that a killed process's work comes back quickly, and
                        // schedules with many quick retries, so that a slow moment on a loaded
                        // machine is retried rather than ending unverifiable or dead.
                        "ECHORELAY_ECHO_TIMEOUT": "2s", "ECHORELAY_DELIVERY_TIMEOUT": "2s", "ECHORELAY_LEASE": "4s",
                        "ECHORELAY_ECHO_RETRY_SCHEDULE": "200ms,500ms,1s,1s,1s,1s,1s,1s,1s,1s",
                        "ECHORELAY_RETRY_SCHEDULE": "200ms,500ms,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s",
                    ]) { _, new in new }.merging(settings) { _, new in new }
                    try await body(FaultLab(database: database, provider: provider, subscriber: subscriber, environment: environment))
                }
                if let given {
                    try await inDatabase(given)
                } else {
                    try await TestDatabase.withFresh { try await inDatabase($0) }
                }
            }
        }
    }

    /// A `serve` process on `port`, answering before this returns.
    func serve(port: Int, role: String = "all", settings: [String: String] = [:]) async throws -> ChildProcess {
        let process = try ChildProcess(["serve", "--port", String(port), "--role", role],
                                       environment: environment.merging(settings) { _, new in new })
        try await process.waitUntilAnswering(HTTPTestClient(port: port))
        return process
    }

    /// Creates the subscription to every event type (ordered unless said otherwise) and gives
    /// its secret to the subscriber.
    func subscribe(through port: Int, ordered: Bool = true) async throws {
        let answer = try await HTTPTestClient(port: port).send(
            .POST, "/v1/subscriptions", headers: [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")],
            body: Array(try JSONSerialization.data(withJSONObject: [
                "url": subscriber.url(), "event_types": ["token.rotated", "phone.changed", "account.deactivated"],
                "ordered": ordered,
            ]))
        )
        subscriber.setSecrets([try #require(answer.json?["secret"] as? String)])
    }

    /// A token rotation of `user` with an echo header the stand-in provider accepts: pushed
    /// again byte for byte, as a provider retries.
    func event(_ id: String, user: String = FaultLab.users[0]) throws -> [UInt8] {
        try signedEventBody(id: id, user: user, provider: provider, session: provider.issueToken(for: user))
    }

    /// Pushes `body` to `port` once.
    func push(_ body: [UInt8], to port: Int) async throws -> TestHTTPResponse {
        try await HTTPTestClient(port: port)
            .send(.POST, "/v1/events", headers: try EventSigner(secret: LiveServer.ingestSecret).headers(for: body), body: body)
    }

    /// Waits until the subscriber has had every one of `events`, at least once.
    func waitUntilDelivered(_ events: Set<String>, within limit: Duration) async throws {
        let deadline = ContinuousClock.now + limit
        while !events.isSubset(of: Set(subscriber.deliveries.compactMap(\.eventID))) {
            guard ContinuousClock.now < deadline else {
                let missing = events.subtracting(subscriber.deliveries.compactMap(\.eventID))
                let statuses = try await storedStatuses()
                let deliveries = try await database.withClient { client in
                    var text: [String] = []
                    for try await (event, status, attempts) in try await client.query(
                        "SELECT event_id, status, attempts FROM deliveries ORDER BY id"
                    ).decode((String, String, Int).self) where missing.contains(event) { text.append("\(event):\(status)/\(attempts)") }
                    return text
                }
                throw TestSetupError("\(missing.count) of \(events.count) acknowledged events never reached the subscriber: "
                    + "events \(missing.sorted().prefix(5).map { "\($0) \(statuses[$0] ?? "not stored")" }), deliveries \(deliveries.prefix(8))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Every stored event's status, by id.
    func storedStatuses() async throws -> [String: String] {
        try await database.withClient { client in
            var statuses: [String: String] = [:]
            for try await (id, status) in try await client.query("SELECT id, status FROM events").decode((String, String).self) {
                statuses[id] = status
            }
            return statuses
        }
    }

    /// The scenario's figures, checked: nothing acknowledged is lost, every acknowledged event
    /// was verified and delivered, in per-user order, and any repeat came with the same
    /// webhook-id. Prints one line for RELIABILITY.md.
    func expectNothingLost(_ scenario: String, _ load: LoadReport) async throws {
        let statuses = try await storedStatuses()
        let lost = load.acknowledged.subtracting(statuses.keys)
        #expect(lost.isEmpty, "acknowledged but not stored: \(lost.sorted())")
        let unverified = load.acknowledged.filter { statuses[$0] != "verified" }
        #expect(unverified.isEmpty, "acknowledged but not verified: \(unverified.sorted().prefix(5).map { "\($0) \(statuses[$0] ?? "-")" })")

        let received = subscriber.deliveries
        #expect(received.allSatisfy { $0.signatureValid })
        let deliveredIDs = Set(received.compactMap(\.eventID))
        let undelivered = load.acknowledged.subtracting(deliveredIDs)
        #expect(undelivered.isEmpty, "verified but never delivered: \(undelivered.sorted().prefix(5))")
        for user in Self.users {
            // At least once, so a repeat may come (after a failover, a delivery whose record
            // was lost with the old primary is sent again, with its webhook-id); a subscriber
            // that drops repeats by webhook-id, as the docs ask, sees no step back.
            var seen = Set<String>()
            let firstArrivals = received.filter { seen.insert($0.webhookID ?? "").inserted }
            let sequences = DeliveryTests.sequences(firstArrivals, user: user)
            #expect(sequences == sequences.sorted(), "\(user) out of order: \(sequences)")
        }
        // A repeat is a retry of the same delivery, which the subscriber can drop by its webhook-id.
        let webhookIDs = Dictionary(grouping: received, by: { $0.eventID ?? "" }).mapValues { Set($0.map(\.webhookID)) }
        let renamed = webhookIDs.filter { $0.value.count != 1 || $0.value.contains(nil) }
        #expect(renamed.isEmpty, "events delivered under more than one webhook-id: \(renamed.keys.sorted().prefix(5))")
        let duplicates = received.count - deliveredIDs.count
        print("FAULT \(scenario): sent=\(load.sent) acknowledged=\(load.acknowledged.count) refused=\(load.refused) "
              + "delivered=\(deliveredIDs.count) duplicates=\(duplicates) lost=\(lost.count + undelivered.count)")
    }
}

extension StandInSubscriber.ReceivedDelivery {
    var eventID: String? { json?.objectValue?["event_id"]?.stringValue }
}

/// What a load generator pushed and what it got back.
struct LoadReport: Sendable {
    /// Requests made, retries included.
    var sent = 0
    /// Event ids answered `202`.
    var acknowledged: Set<String> = []
    /// When each request answered `202` was sent, and when the answer came.
    var acknowledgements: [(sent: ContinuousClock.Instant, answered: ContinuousClock.Instant)] = []
    /// Requests answered anything but `202`, or not answered (the process was down).
    var refused = 0
    /// When each refusal came.
    var refusedAt: [ContinuousClock.Instant] = []

    /// How many requests sent from `start` to `end` were answered `202`.
    func acknowledged(sentFrom start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Int {
        acknowledgements.filter { $0.sent >= start && $0.sent < end }.count
    }

    /// The longest stretch from `start` to `end` in which no `202` was answered: the time
    /// without acknowledged writes, waits and refusals alike.
    func longestStretchWithoutAcknowledgement(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Duration {
        let answers = acknowledgements.map(\.answered).filter { $0 > start && $0 < end }.sorted()
        var longest = Duration.zero, previous = start
        for answer in answers + [end] {
            longest = max(longest, answer - previous)
            previous = answer
        }
        return longest
    }

    /// How many requests were refused from `start` to `end`.
    func refused(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Int {
        refusedAt.filter { $0 >= start && $0 < end }.count
    }
}

/// Ends a `pushLoad` that runs until told: each user's loop stops before its next request.
final class LoadSwitch: Sendable {
    private let stopped = Mutex(false)
    var isStopped: Bool { stopped.withLock { $0 } }
    func stop() { stopped.withLock { $0 = true } }
}

/// A token rotation of `user` whose echo header `provider` accepts for `session`.
func signedEventBody(id: String, user: String, provider: StandInProvider, session: (token: String, secret: String)) throws -> [UInt8] {
    let header = try OAuth1.authorizationHeader(
        method: "GET", url: provider.digitsURL, consumerKey: EchoFixture.consumerKey,
        consumerSecret: EchoFixture.consumerSecret, token: session.token, tokenSecret: session.secret,
        nonce: UUID().uuidString, timestamp: String(Int(Date().timeIntervalSince1970))
    )
    return eventBody(id: id, userID: user) {
        $0["echo"] = ["service_provider": provider.digitsURL, "authorization": header]
    }
}

/// Pushes `perUser` token rotations for each of `FaultLab.users`, each user's in order, the
/// users in parallel, to whichever `serve` answers on `ports` (round robin). Like a real
/// identity provider, it pushes an unacknowledged event again until it gets a `202`. With
/// `until`, it ends early when that switch is stopped (an event not yet acknowledged then is
/// left so). Event ids are `<idPrefix>_<user>_<n>`.
func pushLoad(ports: [Int], provider: StandInProvider, perUser: Int, pause: Duration = .milliseconds(20),
              within limit: Duration = .seconds(90), idPrefix: String = "evt_fault", until loadSwitch: LoadSwitch? = nil) async throws -> LoadReport {
    let signer = EventSigner(secret: LiveServer.ingestSecret)
    let deadline = ContinuousClock.now + limit
    return try await withThrowingTaskGroup(of: LoadReport.self) { group in
        for (userIndex, user) in FaultLab.users.enumerated() {
            let session = provider.issueToken(for: user)
            group.addTask {
                var report = LoadReport()
                events: for index in 0..<perUser {
                    let id = "\(idPrefix)_\(user)_\(index)"
                    // Pushed again byte for byte: the same id with another body would be a conflict.
                    let body = try signedEventBody(id: id, user: user, provider: provider, session: session)
                    while true {
                        if loadSwitch?.isStopped == true { break events }
                        guard ContinuousClock.now < deadline else { throw TestSetupError("\(id) was never acknowledged") }
                        let port = ports[(userIndex + report.sent) % ports.count]
                        report.sent += 1
                        let sentAt = ContinuousClock.now
                        let status = try? await HTTPTestClient(port: port)
                            .send(.POST, "/v1/events", headers: try signer.headers(for: body), body: body).status
                        if status == 202 {
                            report.acknowledged.insert(id)
                            report.acknowledgements.append((sentAt, .now))
                            break
                        }
                        report.refused += 1
                        report.refusedAt.append(.now)
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    try await Task.sleep(for: pause)
                }
                return report
            }
        }
        var total = LoadReport()
        for try await report in group {
            total.sent += report.sent
            total.acknowledged.formUnion(report.acknowledged)
            total.refused += report.refused
            total.refusedAt += report.refusedAt
            total.acknowledgements += report.acknowledgements
        }
        return total
    }
}
