import EchoRelayCore
import EchoRelayServer
import EchoRelayStandIns
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// A live EchoRelay that re-verifies over OAuth 2 only (no OAuth Echo configured), on one
/// store, against the oauthlib authorization server, with a stand-in subscriber registered
/// for every type.
struct OAuth2Fixture: Sendable {
    /// EchoRelay's own client at the authorization server.
    static let clientID = "echorelay"
    static let clientSecret = "echorelay-client-s3cret/+= pass"
    /// The app the users' tokens are issued to.
    static let appClientID = "phone-app"

    let http: HTTPTestClient
    let authorizationServer: OAuthlibAuthorizationServer
    let subscriber: StandInSubscriber
    let store: StoreKind
    /// Where the data is: a PostgreSQL database's URL, or the embedded store's file.
    let location: String
    let signer = EventSigner(secret: LiveServer.ingestSecret)

    /// - clientSecret: what EchoRelay sends (another than the server knows: refused).
    /// - issuer: `ECHORELAY_OAUTH2_ISSUER`.
    /// - userInfo: whether `ECHORELAY_OAUTH2_USERINFO_URL` is set.
    static func run(
        _ store: StoreKind, clientSecret: String = clientSecret, issuer: String? = nil, userInfo: Bool = true,
        retrySchedule: [Duration] = [.milliseconds(100), .milliseconds(200), .milliseconds(400)], timeout: Duration = .seconds(5),
        logger: Logger = TestLogger.quiet, _ body: @Sendable (OAuth2Fixture) async throws -> Void
    ) async throws {
        let authorizationServer = try await OAuthlibAuthorizationServer(clients: [Self.clientID: Self.clientSecret])
        let oauth2 = OAuth2Configuration(
            introspectionURL: authorizationServer.introspectionURL, clientID: clientID, clientSecret: Secret(clientSecret),
            userInfoURL: userInfo ? authorizationServer.userInfoURL : nil, tokenClientID: appClientID, issuer: issuer, allowHTTP: true
        )
        @Sendable func serve(_ location: String) async throws {
            let configuration = ServerConfiguration(
                host: "127.0.0.1", port: 0, databaseURL: Secret(location), ingestSecrets: [Secret(LiveServer.ingestSecret)],
                adminToken: Secret(LiveServer.adminToken), role: .all,
                echo: EchoConfiguration(consumerKey: "", allowedHosts: [], timeout: timeout, retrySchedule: retrySchedule,
                                        lease: .seconds(15), pollInterval: .milliseconds(200)),
                delivery: DeliveryConfiguration(timeout: .seconds(5), retrySchedule: [.milliseconds(100)], allowPrivateSubscribers: true),
                oauth2: oauth2
            )
            let app = try await EchoRelayServer.makeApplication(configuration, logger: logger)
            try await StandInSubscriber().run { subscriber in
                try await app.test(.live) { client in
                    let fixture = OAuth2Fixture(http: HTTPTestClient(port: try #require(client.port)), authorizationServer: authorizationServer,
                                                subscriber: subscriber, store: store, location: location)
                    let created = try await fixture.subscribe()
                    subscriber.setSecrets([try #require(created["secret"] as? String)])
                    try await body(fixture)
                }
            }
        }
        switch store {
        case .postgres, .postgresByUser:
            try await TestDatabase.withFresh { try await serve($0.url) }
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-oauth2-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await serve("sqlite:" + folder.appendingPathComponent("echorelay.sqlite").path)
        }
    }

    // MARK: The provider's side

    /// A new session of `user` at the authorization server: its access token.
    func session(_ user: String, phone: String? = nil, expiresIn: Double = 3600, clientID: String = appClientID,
                 issuer: String? = nil) async throws -> String {
        if let phone { try await authorizationServer.setAccount(user: user, phoneNumber: phone) }
        return try await authorizationServer.issueToken(user: user, clientID: clientID, expiresIn: expiresIn, issuer: issuer)
    }

    static func body(_ type: String, userID: String, phone: String? = nil, token: String, id: String) -> [UInt8] {
        eventBody(id: id, type: type, userID: userID, phone: phone) {
            $0["echo"] = nil
            $0["oauth2"] = ["access_token": token]
        }
    }

    /// Pushes an event carrying `token` as its oauth2 proof, and returns its id.
    @discardableResult
    func push(_ type: String, userID: String, phone: String? = nil, token: String, id: String = "evt_" + UUID().uuidString) async throws -> String {
        let response = try await ingest(Self.body(type, userID: userID, phone: phone, token: token, id: id))
        guard response.status == 202 else { throw TestSetupError("ingest answered \(response.status): \(response.text)") }
        return id
    }

    func ingest(_ body: [UInt8]) async throws -> TestHTTPResponse {
        try await http.send(.POST, "/v1/events", headers: try signer.headers(for: body), body: body)
    }

    // MARK: What EchoRelay says

    /// Waits until the event has a final outcome and returns `GET /v1/events/{id}`.
    func outcome(of eventID: String, within limit: Duration = .seconds(30)) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let response = try await http.get("/v1/events/\(eventID)", bearer: LiveServer.adminToken)
            if let json = response.json, json["status"] as? String != "pending" { return json }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSetupError("event \(eventID) was still pending after \(limit)")
    }

    /// Pushes an event and waits for its outcome.
    func pushed(_ type: String, userID: String, phone: String? = nil, token: String) async throws -> [String: Any] {
        try await outcome(of: try await push(type, userID: userID, phone: phone, token: token))
    }

    func user(_ userID: String) async throws -> [String: Any]? {
        try await http.get("/v1/users/\(userID)", bearer: LiveServer.adminToken).json
    }

    func subscribe() async throws -> [String: Any] {
        let body = try JSONSerialization.data(withJSONObject: [
            "url": subscriber.url(), "event_types": ["token.rotated", "phone.changed", "account.deactivated"], "ordered": false,
        ])
        let response = try await http.send(.POST, "/v1/subscriptions", headers: [
            ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
        ], body: Array(body))
        guard response.status == 201, let json = response.json else {
            throw TestSetupError("creating a subscription answered \(response.status): \(response.text)")
        }
        return json
    }

    /// The deliveries the subscriber received of `eventID`, once `count` have arrived.
    func deliveries(of eventID: String, count: Int = 1, within limit: Duration = .seconds(20)) async throws -> [StandInSubscriber.ReceivedDelivery] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let received = subscriber.deliveries.filter { $0.object?["event_id"]?.stringValue == eventID }
            if received.count >= count { return received }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSetupError("\(eventID) was not delivered \(count) time(s) within \(limit)")
    }

    /// The event's stored proof columns: echo's two and the access token (all nil once final).
    func storedProof(of eventID: String) async throws -> [String?] {
        let sql = "SELECT echo_service_provider, echo_authorization, oauth2_access_token FROM events WHERE id = '\(eventID)'"
        switch store {
        case .postgres, .postgresByUser:
            return try await TestDatabase(url: location, name: "").withClient { client in
                for try await row in try await client.query(PostgresQuery(unsafeSQL: sql)).decode((String?, String?, String?).self) {
                    return [row.0, row.1, row.2]
                }
                throw TestSetupError("no event \(eventID)")
            }
        case .sqlite:
            // Read from outside, by Python's sqlite3, as another program would.
            let path = String(location.dropFirst("sqlite:".count))
            let script = "import json,sqlite3,sys; c=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro', uri=True); print(json.dumps(c.execute(sys.argv[2]).fetchone()))"
            let reader = try ChildProcess(["python3", "-c", script, path, sql], executable: URL(fileURLWithPath: "/usr/bin/env"))
            guard try await reader.wait() == 0, let row = try JSONSerialization.jsonObject(with: Data(reader.standardOutput.utf8)) as? [Any] else {
                throw TestSetupError("reading \(path) failed: \(reader.standardError)")
            }
            return row.map { $0 as? String }
        }
    }
}
