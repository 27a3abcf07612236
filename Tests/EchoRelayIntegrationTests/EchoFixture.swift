import EchoRelayCore
import EchoRelayServer
import Foundation
import Logging
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// A live server with its verify workers, and a stand-in identity provider they talk to.
struct EchoFixture: Sendable {
    static let consumerKey = "digits-consumer-key"
    static let consumerSecret = "digits-consumer-secret"

    let server: LiveServer
    let provider: StandInProvider

    static func run(
        retrySchedule: [Duration] = [.milliseconds(100), .milliseconds(200)], timeout: Duration = .seconds(2),
        lease: Duration = .seconds(10), allowedHosts: [String] = [], logger: Logger = TestLogger.quiet,
        _ body: @Sendable (EchoFixture) async throws -> Void
    ) async throws {
        let provider = StandInProvider()
        provider.addConsumer(key: consumerKey, secret: consumerSecret)
        try await provider.run { provider in
            let echo = EchoConfiguration(
                consumerKey: consumerKey, allowedHosts: [provider.host] + allowedHosts, allowHTTP: true, timeout: timeout,
                retrySchedule: retrySchedule, lease: lease, pollInterval: .milliseconds(200)
            )
            try await LiveServer.run(role: .all, echo: echo, logger: logger) { server in
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
