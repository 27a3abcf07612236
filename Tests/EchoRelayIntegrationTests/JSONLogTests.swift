import EchoRelayCore
import Foundation
import NIOHTTP1
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `serve --log-format json`: one JSON object per line, keyed by event, user and
/// subscription, and never a secret.
@Suite struct JSONLogTests {
    @Test func everyLineIsAJSONObjectCarryingTheEventAndUserAndNoSecret() async throws {
        try await EmbeddedServeTests.withFolder { folder in
            let port = try freeLoopbackPort()
            let http = HTTPTestClient(port: port)
            // debug: an accepted event's own line is a debug line (info reports counts now and then).
            let serve = try ChildProcess(["serve", "--port", String(port), "--log-format", "json", "--log-level", "debug"], environment: [
                "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret, "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken,
                "ECHORELAY_CONSUMER_KEY": EchoFixture.consumerKey, "ECHORELAY_ECHO_ALLOWED_HOSTS": "127.0.0.1:1",
            ], workingDirectory: folder)
            try await serve.waitUntilAnswering(http)
            // An echo header for a host that is not allowed: rejected before any request is sent.
            let authorization = try OAuth1.authorizationHeader(
                method: "GET", url: "https://elsewhere.example/1.1/account/verify_credentials.json",
                consumerKey: EchoFixture.consumerKey, consumerSecret: EchoFixture.consumerSecret, token: "tok-visible-nowhere",
                tokenSecret: "tok-secret-visible-nowhere", nonce: "n", timestamp: String(Int(Date().timeIntervalSince1970))
            )
            let body = eventBody(id: "evt_json_log", userID: "json-user") {
                $0["echo"] = ["service_provider": "https://elsewhere.example/1.1/account/verify_credentials.json",
                              "authorization": authorization]
            }
            #expect(try await http.send(.POST, "/v1/events", headers: try EventSigner(secret: LiveServer.ingestSecret).headers(for: body),
                                        body: body).status == 202)
            let deadline = ContinuousClock.now + .seconds(15)
            while !serve.standardError.contains("event rejected"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            serve.signal(SIGTERM)
            #expect(try await serve.wait() == 0)

            let lines = serve.standardError.split(separator: "\n")
            #expect(lines.count >= 3)
            var objects: [[String: JSONValue]] = []
            for line in lines {
                guard case .object(let object)? = try? JSONValue.parse(Array(line.utf8)) else {
                    Issue.record("not a JSON object: \(line)")
                    continue
                }
                #expect(object["time"]?.stringValue.flatMap(RFC3339.parse) != nil, "\(line)")
                #expect(object["level"]?.stringValue != nil && object["message"]?.stringValue != nil, "\(line)")
                objects.append(object)
            }
            let accepted = try #require(objects.first { $0["message"]?.stringValue == "event accepted" })
            #expect(accepted["event.id"]?.stringValue == "evt_json_log")
            #expect(accepted["user.id"]?.stringValue == "json-user")
            let rejected = try #require(objects.first { $0["message"]?.stringValue == "event rejected" })
            #expect(rejected["event.id"]?.stringValue == "evt_json_log")
            #expect(rejected["verify.reason"]?.stringValue == "host_not_allowed")

            let signature = try #require(OAuthAuthorizationHeader.parse(authorization).signature)
            for secret in [LiveServer.ingestSecret, LiveServer.adminToken, "tok-visible-nowhere", "tok-secret-visible-nowhere",
                           EchoFixture.consumerSecret, signature] {
                #expect(!serve.standardError.contains(secret), "a secret reached the log")
            }
        }
    }
}
