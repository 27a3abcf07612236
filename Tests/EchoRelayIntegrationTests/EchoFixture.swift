import EchoRelayCore
import EchoRelayServer
import EchoRelaySharedSignals
import EchoRelayStandIns
import Foundation
import Logging
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// A live server with its verify workers, and a stand-in identity provider they talk to.
struct EchoFixture: Sendable {
    static let consumerKey = "digits-consumer-key"

    /// The environment of a `serve` child process on `database` that verifies with the
    /// stand-in provider at `providerHost` and may deliver to loopback subscribers, logging
    /// errors only; tests add their timings on top.
    static func serveEnvironment(database: TestDatabase, providerHost: String) -> [String: String] {
        [
            "ECHORELAY_DATABASE_URL": database.url, "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
            "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken, "ECHORELAY_CONSUMER_KEY": consumerKey,
            "ECHORELAY_ECHO_ALLOWED_HOSTS": providerHost, "ECHORELAY_ECHO_ALLOW_HTTP": "1",
            "ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS": "1", "ECHORELAY_LOG_LEVEL": "error",
        ]
    }
    static let consumerSecret = "digits-consumer-secret"

    let server: LiveServer
    let provider: StandInProvider

    /// The echo timeout is generous so that a loaded machine running the whole suite does not
    /// turn a slow answer into a retry; tests of timeouts pass their own.
    static func run(
        retrySchedule: [Duration] = [.milliseconds(100), .milliseconds(200)], timeout: Duration = .seconds(5),
        lease: Duration = .seconds(15), allowedHosts: [String] = [],
        delivery: DeliveryConfiguration = DeliveryConfiguration(
            timeout: .seconds(5), retrySchedule: [.milliseconds(100), .milliseconds(200)], allowPrivateSubscribers: true
        ),
        secretKey: String? = nil, database: TestDatabase? = nil, securityEvents: SecurityEventReceiverSettings? = nil,
        retention: RetentionPolicy = .defaults, pruneInterval: Duration = .seconds(600),
        logger: Logger = TestLogger.quiet, _ body: @Sendable (EchoFixture) async throws -> Void
    ) async throws {
        let provider = StandInProvider()
        provider.addConsumer(key: consumerKey, secret: consumerSecret)
        try await provider.run { provider in
            let echo = EchoConfiguration(
                consumerKey: consumerKey, allowedHosts: [provider.host] + allowedHosts, allowHTTP: true, timeout: timeout,
                retrySchedule: retrySchedule, lease: lease, pollInterval: .milliseconds(200)
            )
            try await LiveServer.run(role: .all, echo: echo, delivery: delivery, secretKey: secretKey, securityEvents: securityEvents,
                                     retention: retention, pruneInterval: pruneInterval, logger: logger, database: database) { server in
                try await body(EchoFixture(server: server, provider: provider))
            }
        }
    }

    /// OAuth Echo credentials for a session, signed the way a client app signs them.
    func echo(
        token: String, tokenSecret: String, url: String? = nil, consumerKey: String = consumerKey,
        consumerSecret: String = consumerSecret, timestamp: Date = Date()
    ) throws -> [String: String] {
        let url = url ?? provider.digitsURL
        let header = try OAuth1.authorizationHeader(
            method: "GET", url: url, consumerKey: consumerKey, consumerSecret: consumerSecret, token: token,
            tokenSecret: tokenSecret, nonce: UUID().uuidString, timestamp: String(Int(timestamp.timeIntervalSince1970))
        )
        return ["service_provider": url, "authorization": header]
    }

    /// Pushes an event and returns its id.
    @discardableResult
    func push(_ type: String, userID: String, phone: String? = nil, echo: [String: String], id: String = "evt_" + UUID().uuidString) async throws -> String {
        let body = eventBody(id: id, type: type, userID: userID, phone: phone) { $0["echo"] = echo }
        let response = try await server.ingest(body)
        guard response.status == 202 else { throw TestSetupError("ingest answered \(response.status): \(response.text)") }
        return id
    }

    /// Waits until the event has a final outcome and returns `GET /v1/events/{id}`.
    func outcome(of eventID: String, within limit: Duration = .seconds(30)) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let response = try await server.http.get("/v1/events/\(eventID)", bearer: LiveServer.adminToken)
            if let json = response.json, json["status"] as? String != "pending" { return json }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSetupError("event \(eventID) was still pending after \(limit)")
    }

    /// A verified session for a new provider account: the user id and echo credentials.
    func session(_ userID: String, phone: String? = nil) throws -> (token: String, secret: String) {
        provider.addAccount(userID: userID, phoneNumber: phone)
        return provider.issueToken(for: userID)
    }

    /// Pushes an event signed for `session` and waits for its outcome.
    @discardableResult
    func pushVerified(_ type: String, userID: String, phone: String? = nil, session: (token: String, secret: String)) async throws -> [String: Any] {
        let id = try await push(type, userID: userID, phone: phone, echo: try echo(token: session.token, tokenSecret: session.secret))
        return try await outcome(of: id)
    }

    /// Creates a subscription through the API and returns its JSON (with the secret).
    func subscribe(
        url: String, types: [String] = ["token.rotated", "phone.changed", "account.deactivated"], ordered: Bool = true,
        token: String = LiveServer.adminToken
    ) async throws -> [String: Any] {
        let body = try JSONSerialization.data(withJSONObject: ["url": url, "event_types": types, "ordered": ordered])
        let response = try await server.http.send(
            .POST, "/v1/subscriptions", headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
            body: Array(body)
        )
        guard response.status == 201, let json = response.json else {
            throw TestSetupError("creating a subscription answered \(response.status): \(response.text)")
        }
        return json
    }

    /// The event's deliveries, as `GET /v1/events/{id}` shows them.
    func deliveries(of eventID: String) async throws -> [[String: Any]] {
        let json = try await server.http.get("/v1/events/\(eventID)", bearer: LiveServer.adminToken).json
        return json?["deliveries"] as? [[String: Any]] ?? []
    }

    /// Waits until every delivery of the event is final (not pending), and returns them.
    func finalDeliveries(of eventID: String, count: Int, within limit: Duration = .seconds(30)) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let deliveries = try await deliveries(of: eventID)
            if deliveries.count >= count, deliveries.allSatisfy({ $0["status"] as? String != "pending" }) { return deliveries }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSetupError("the deliveries of \(eventID) were not final after \(limit): \(try await deliveries(of: eventID))")
    }

    func user(_ userID: String) async throws -> TestHTTPResponse {
        try await server.http.get("/v1/users/\(userID)", bearer: LiveServer.adminToken)
    }

    /// The stored echo columns of an event: both nil once the outcome is final.
    func storedEcho(of eventID: String) async throws -> (String?, String?) {
        try await server.database.withClient { client in
            for try await row in try await client.query(
                "SELECT echo_service_provider, echo_authorization FROM events WHERE id = \(eventID)"
            ).decode((String?, String?).self) { return row }
            throw TestSetupError("no event \(eventID)")
        }
    }
}
