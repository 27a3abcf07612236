import EchoRelayCore
import Foundation
import InMemoryLogging
import Logging
import NIOHTTP1
import Synchronization
import Testing
import TestSupport

/// What support sees of an OAuth 2 event, and what never reaches anyone: the access token,
/// EchoRelay's client secret and the `Authorization` headers stay out of every log line (at
/// trace level), error, attempt, the audit log and the console.
@Suite struct OAuth2SupportTests {
    static func cli(_ arguments: [String], _ f: OAuth2Fixture, input: Data = Data()) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run(arguments, environment: ["ECHORELAY_URL": f.http.baseURL, "ECHORELAY_TOKEN": LiveServer.adminToken],
                                   input: input)
    }

    @Test func theCommandLineShowsThePathAndReverifiesWithAFreshAccessToken() async throws {
        try await OAuth2Fixture.run(.sqlite) { f in
            let token = try await f.session("u-cli")
            try await f.authorizationServer.outage(4, status: 503)
            let id = try await f.push("token.rotated", userID: "u-cli", token: token)
            #expect(try await f.outcome(of: id)["reason"] as? String == "provider_unavailable")

            let shown = try await Self.cli(["events", "show", id], f)
            let lines = shown.stdout.split(separator: "\n")
            #expect(lines.contains { $0.hasPrefix("path:") && $0.hasSuffix("oauth2") }, "\(shown.stdout)")
            #expect(lines.contains { $0.hasPrefix("reason:") && $0.hasSuffix("provider_unavailable") })

            let fresh = try await f.session("u-cli")
            let reverify = try await Self.cli(["events", "reverify", id, "--reason", "the idp is back", "--oauth2", "-"], f,
                                              input: Data(#"{"access_token": "\#(fresh)"}"#.utf8))
            #expect(reverify.status == 0, "\(reverify.stderr)")
            #expect(reverify.stdout.contains("event \(id) is pending verification again"), "\(reverify.stdout)")
            #expect(!(reverify.stdout + reverify.stderr).contains(fresh), "the token is never printed")
            #expect(try await f.outcome(of: id)["reason"] as? String == "provider_confirmed")

            // A malformed token names the field and never the value; both proofs is a usage error.
            let bad = try await Self.cli(["events", "reverify", id, "--reason", "r", "--oauth2", "-"], f,
                                         input: Data(#"{"access_token": "not a token \#(fresh)", "x": 1}"#.utf8))
            #expect(bad.status == 1)
            #expect(bad.stderr.hasPrefix("error: the oauth2 object on standard input cannot be used"), "\(bad.stderr)")
            #expect(bad.stderr.contains("access_token: must be an OAuth 2 bearer token") && bad.stderr.contains("x: is not a field of an oauth2 object"))
            #expect(bad.stderr.contains("hint: --oauth2 must hold one JSON object"))
            #expect(!bad.stderr.contains(fresh))
            let both = try await Self.cli(["events", "reverify", id, "--reason", "r", "--oauth2", "-", "--echo", "-"], f)
            #expect(both.status == 64)
            #expect(both.stderr.contains("--echo and --oauth2 cannot both be given"), "\(both.stderr)")

            let audit = try await Self.cli(["audit", "--action", "event.reverify", "--json"], f)
            #expect(audit.stdout.contains(id) && !audit.stdout.contains(fresh))
        }
    }

    @Test func theConsoleShowsThePath() async throws {
        try await OAuth2Fixture.run(.postgres) { f in
            let token = try await f.session("u-console")
            let id = try await f.push("token.rotated", userID: "u-console", token: token)
            _ = try await f.outcome(of: id)
            let browser = ConsoleBrowser(port: f.http.port)
            try await browser.signIn(token: LiveServer.adminToken)
            let page = try await browser.get("/console/events/\(id)")
            #expect(page.status == 200)
            #expect(page.text.contains("OAuth 2 introspection") && page.text.contains("<code>oauth2</code>"), "\(page.text)")
            #expect(page.text.contains("provider_confirmed"))
            #expect(!page.text.contains(token))
        }
    }

    /// Every path an OAuth 2 event can take, logged at trace: no token, no client secret, no
    /// `Authorization` header value in any line.
    @Test(arguments: OAuth2VerificationTests.stores)
    func noCredentialReachesALogLineAtTraceLevel(store: StoreKind) async throws {
        let capture = LogCapture()
        let secrets = Collected([OAuth2Fixture.clientSecret, OAuth2Fixture.clientSecret.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!])
        try await OAuth2Fixture.run(store, logger: capture.logger) { f in
            let token = try await f.session("u-log", phone: "+15555550142")
            secrets.add(token)
            _ = try await f.pushed("token.rotated", userID: "u-log", token: token)
            _ = try await f.pushed("phone.changed", userID: "u-log", phone: "+15555550142", token: token)
            _ = try await f.pushed("phone.changed", userID: "u-log", phone: "+15555550999", token: token)
            _ = try await f.pushed("token.rotated", userID: "u-other", token: token)
            try await f.authorizationServer.outage(1, status: 503)
            _ = try await f.pushed("account.deactivated", userID: "u-log", token: token)
            try await f.authorizationServer.revoke(token)
            _ = try await f.pushed("account.deactivated", userID: "u-log", token: token)
            let forged = "forged-token-" + UUID().uuidString
            secrets.add(forged)
            _ = try await f.pushed("account.deactivated", userID: "u-log", token: forged)
            // A refused body, with the token in it.
            _ = try await f.ingest(Array(#"{"id":"evt_bad","type":"token.rotated","user_id":"u-log","occurred_at":"x","oauth2":{"access_token":"\#(forged)"}}"#.utf8))
            let basic = try #require(try await f.authorizationServer.requests().first?.headers["authorization"])
            secrets.add(basic, String(basic.dropFirst("Basic ".count)))
        }
        try await OAuth2Fixture.run(store, clientSecret: "a-refused-client-s3cret", logger: capture.logger) { f in
            secrets.add("a-refused-client-s3cret")
            let token = try await f.session("u-refused")
            secrets.add(token)
            #expect(try await f.pushed("token.rotated", userID: "u-refused", token: token)["reason"] as? String == "client_refused")
        }
        let log = capture.text
        #expect(capture.handler.entries.contains { $0.level == .trace || $0.level == .debug }, "the capture saw the low levels")
        #expect(log.contains("client_refused") && log.contains("will retry"), "the log saw the refusals")
        for secret in secrets.all {
            #expect(!log.contains(secret), "a credential reached the log")
        }
        #expect(secrets.all.count == 8, "every credential was collected")
    }
}

/// What a test collects from inside the fixture's body, which runs concurrently.
final class Collected: Sendable {
    private let items: Mutex<[String]>

    init(_ items: [String]) { self.items = Mutex(items) }

    func add(_ more: String...) { items.withLock { $0 += more } }

    var all: [String] { items.withLock { $0 } }
}
