import EchoRelayCore
import EchoRelaySharedSignals
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// The examples in docs/ run as they are written: each is the fenced block after an
/// `<!-- example: NAME -->` line, written to a file and run with its interpreter (`python3`
/// from the tests' virtual environment, with `standardwebhooks`; Debian's `node`).
@Suite struct DocsExamplesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The code of the block named `name` in `document` (a path from the repository's root).
    static func example(_ name: String, in document: String) throws -> String {
        let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        guard let marker = lines.firstIndex(of: "<!-- example: \(name) -->"), marker + 1 < lines.count,
              lines[marker + 1].hasPrefix("```") else {
            throw TestSetupError("\(document) has no fenced block after <!-- example: \(name) -->")
        }
        let body = lines[(marker + 2)...].prefix { !$0.hasPrefix("```") }
        return body.joined(separator: "\n") + "\n"
    }

    /// Writes the example to a fresh folder and starts it with `interpreter`.
    static func start(_ name: String, in document: String, interpreter: String, arguments: [String] = [],
                      environment: [String: String]) throws -> Spawned {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docs-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(name)
        try example(name, in: document).write(to: file, atomically: true, encoding: .utf8)
        let inherited = ProcessInfo.processInfo.environment
        return try Spawned("/usr/bin/env", [interpreter, file.path] + arguments, environment: inherited.merging(environment) { $1 })
    }

    /// Waits until something answers HTTP on the port, or the child has exited.
    static func waitUntilListening(_ child: Spawned, port: Int, name: String) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            guard child.isRunning else {
                throw TestSetupError("\(name) exited: \(String(decoding: child.standardError, as: UTF8.self))")
            }
            if (try? await HTTPTestClient(port: port).get("/")) != nil { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSetupError("\(name) did not listen on \(port) within 30 s")
    }

    static func handledLines(_ child: Spawned, webhookID: String) -> [String] {
        String(decoding: child.standardOutput, as: UTF8.self).split(separator: "\n").map(String.init)
            .filter { $0.contains("webhook-id \(webhookID)") }
    }

    @Test(arguments: [("subscriber.py", "python3"), ("subscriber.js", "node")])
    func theSubscriberExampleVerifiesRealDeliveriesAndHandlesEachUpdateOnce(file: String, interpreter: String) async throws {
        try await EchoFixture.run { f in
            let port = try freeLoopbackPort()
            let subscription = try await f.subscribe(url: "http://127.0.0.1:\(port)/hooks/echorelay")
            let secret = try #require(subscription["secret"] as? String)
            let subscriber = try Self.start(file, in: "docs/subscribers.md", interpreter: interpreter,
                                            environment: ["PORT": "\(port)", "ECHORELAY_WEBHOOK_SECRET": secret])
            defer { subscriber.signal(SIGKILL) }
            try await Self.waitUntilListening(subscriber, port: port, name: file)

            // A real delivery, verified by the example: EchoRelay records its 204.
            let event = try await f.pushVerified("token.rotated", userID: "docs-1", session: try f.session("docs-1"))
            let eventID = try #require(event["id"] as? String)
            let delivery = try #require(try await f.finalDeliveries(of: eventID, count: 1).first)
            #expect(delivery["status"] as? String == "delivered")
            #expect((delivery["attempts"] as? [[String: Any]])?.first?["status_code"] as? Int == 204)
            let webhookID = try #require(delivery["webhook_id"] as? String)
            #expect(Self.handledLines(subscriber, webhookID: webhookID).count == 1,
                    "\(String(decoding: subscriber.standardOutput, as: UTF8.self))")

            // Anything not signed with the subscription's secret is refused, and not handled.
            let http = HTTPTestClient(port: port)
            let body = Array(#"{"type":"account.deactivated","user_id":"docs-1","sequence":2,"data":{}}"#.utf8)
            let now = Int64(Date().timeIntervalSince1970)
            func headers(id: String, timestamp: Int64, secret: String) throws -> [(String, String)] {
                [("Content-Type", "application/json"), ("webhook-id", id), ("webhook-timestamp", "\(timestamp)"),
                 ("webhook-signature", StandardWebhooks.signatureHeaderValue(
                    id: id, timestamp: timestamp, body: body, secrets: [try WebhookSecret(secret)]))]
            }
            let forged = try await http.send(.POST, "/hooks/echorelay", headers: try headers(
                id: "msg_forged", timestamp: now, secret: "whsec_" + Data(repeating: 7, count: 24).base64EncodedString()), body: body)
            #expect(forged.status == 400)
            let stale = try await http.send(.POST, "/hooks/echorelay", headers: try headers(id: "msg_stale", timestamp: now - 3_600, secret: secret), body: body)
            #expect(stale.status == 400, "a timestamp an hour old is refused")

            // A retry (the same webhook-id, signed afresh) is answered and not handled again.
            let retry = try await http.send(.POST, "/hooks/echorelay", headers: try headers(id: webhookID, timestamp: now, secret: secret), body: body)
            #expect(retry.status == 204)
            #expect(Self.handledLines(subscriber, webhookID: webhookID).count == 1)

            // A replay from support repeats the webhook-id with a replay id: it is handled.
            let replay = try await f.server.http.send(
                .POST, "/v1/events/\(eventID)/replay",
                headers: [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")],
                body: Array(#"{"reason": "docs example: a backend restored from backup"}"#.utf8)
            )
            #expect(replay.status == 202, "\(replay.text)")
            let deadline = ContinuousClock.now + .seconds(30)
            while Self.handledLines(subscriber, webhookID: webhookID).count < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            let handled = Self.handledLines(subscriber, webhookID: webhookID)
            #expect(handled.count == 2)
            #expect(handled.last?.hasSuffix("(replay)") == true, "\(handled)")
            #expect(handled.first?.hasPrefix("token.rotated for user docs-1, sequence 1") == true, "\(handled)")
        }
    }

    @Test func theIdentityProvidersPushExampleIsAcceptedAndItsRetryGetsTheSameReceipt() async throws {
        try await LiveServer.run { server in
            func push() async throws -> (status: Int32, output: String) {
                let child = try Self.start("push.py", in: "docs/identity-provider.md", interpreter: "python3",
                                           arguments: ["evt_docs_push_1", "docs-user-7", "2026-11-23T10:15:30Z"], environment: [
                    "ECHORELAY_URL": server.http.baseURL, "ECHORELAY_INGEST_SECRET": LiveServer.ingestSecret,
                    "ECHO_SERVICE_PROVIDER": "https://api.digits.com/1.1/sdk/account.json",
                    "ECHO_AUTHORIZATION": #"OAuth oauth_consumer_key="k", oauth_nonce="n", oauth_signature="s", oauth_signature_method="HMAC-SHA1", oauth_timestamp="1795527126", oauth_token="t", oauth_version="1.0""#,
                ])
                let status = try await child.wait()
                return (status, String(decoding: child.standardOutput + child.standardError, as: UTF8.self))
            }
            let first = try await push()
            #expect(first.status == 0, "\(first.output)")
            #expect(first.output.hasPrefix("202 "), "\(first.output)")
            #expect(first.output.contains(#""sequence":1"#) || first.output.contains(#""sequence": 1"#), "\(first.output)")
            let again = try await push()
            #expect(again.status == 0, "\(again.output)")
            #expect(again.output == first.output, "a retry with the same id gets the stored receipt")
            #expect(try await server.rowCounts()["events"] == 1)
        }
    }

    /// The OAuth 2 worked example of docs/identity-provider.md, run as written against an
    /// authorization server built on oauthlib: a rotation with the user's token is verified,
    /// the deactivation with that token once it is revoked is verified and deactivates the
    /// user, and the same with a made-up token is rejected.
    @Test func theOAuth2WorkedExampleVerifiesARotationThenTheDeactivationThatEndsIt() async throws {
        try await OAuth2Fixture.run(.postgres) { f in
            func push(_ type: String, _ id: String, user: String, token: String) async throws -> String {
                let child = try Self.start("push_oauth2.py", in: "docs/identity-provider.md", interpreter: "python3",
                                           arguments: [type, id, user], environment: [
                    "ECHORELAY_URL": f.http.baseURL, "ECHORELAY_INGEST_SECRET": LiveServer.ingestSecret, "ACCESS_TOKEN": token,
                ])
                let status = try await child.wait()
                let output = String(decoding: child.standardOutput + child.standardError, as: UTF8.self)
                #expect(status == 0, "\(output)")
                return output
            }
            let token = try await f.session("4815162342")
            let rotated = try await push("token.rotated", "evt_01HZX4", user: "4815162342", token: token)
            #expect(rotated.hasPrefix(#"202 {"id":"evt_01HZX4","sequence":1,"status":"accepted"}"#), "\(rotated)")
            let verified = try await f.outcome(of: "evt_01HZX4")
            #expect(verified["status"] as? String == "verified" && verified["reason"] as? String == "provider_confirmed")
            #expect(verified["path"] as? String == "oauth2")

            try await f.authorizationServer.revoke(token)
            _ = try await push("account.deactivated", "evt_01HZX5", user: "4815162342", token: token)
            let ended = try await f.outcome(of: "evt_01HZX5")
            #expect(ended["status"] as? String == "verified" && ended["reason"] as? String == "known_token_inactive")
            #expect(try await f.user("4815162342")?["state"] as? String == "deactivated")

            _ = try await f.session("2718281828")
            _ = try await push("account.deactivated", "evt_01HZX6", user: "2718281828", token: "made-up-" + UUID().uuidString)
            let forged = try await f.outcome(of: "evt_01HZX6")
            #expect(forged["status"] as? String == "rejected" && forged["reason"] as? String == "unknown_token")
        }
    }

    /// The stand-in transmitter of docs/identity-provider.md, run as written: its SET is
    /// accepted with the key it publishes, and becomes the user's event, verified by its signature.
    @Test func theStandInTransmitterPushesASetThatBecomesAVerifiedEvent() async throws {
        let jwksPort = try freeLoopbackPort()
        let settings = SecurityEventReceiverSettings(
            issuer: "https://idp.example.com/", audience: "https://echorelay.example.com/",
            jwksURL: "http://127.0.0.1:\(jwksPort)/jwks.json", allowHTTP: true, pushToken: Secret("docs-example-push-token-0123")
        )
        try await EchoFixture.run(securityEvents: settings) { f in
            let transmitter = try Self.start("transmitter.py", in: "docs/identity-provider.md", interpreter: "python3",
                                             arguments: ["user-42"], environment: [
                "ECHORELAY_URL": f.server.http.baseURL, "ECHORELAY_SET_ISSUER": settings.issuer,
                "ECHORELAY_SET_AUDIENCE": settings.audience, "ECHORELAY_SET_PUSH_TOKEN": "docs-example-push-token-0123",
                "JWKS_PORT": "\(jwksPort)",
            ])
            #expect(try await transmitter.wait(timeout: .seconds(60)) == 0, "\(String(decoding: transmitter.standardError, as: UTF8.self))")
            let output = String(decoding: transmitter.standardOutput, as: UTF8.self)
            #expect(output.hasPrefix("202 "), "\(output)")

            let recorded = try await f.server.http.get("/v1/sets", bearer: LiveServer.adminToken).json
            let set = try #require((recorded?["security_events"] as? [[String: Any]])?.first)
            #expect(output.contains(try #require(set["jti"] as? String)))
            let event = try await f.outcome(of: try #require(set["event_id"] as? String))
            #expect(event["user_id"] as? String == "user-42")
            #expect(event["type"] as? String == "token.rotated")
            #expect(event["reason"] as? String == "set_signature")
        }
    }

    /// Both delivery methods of docs/identity-provider.md, step by step as written: each script
    /// registers its stream with the transmitter on loopback and verifies it end to end.
    @Test func theSharedSignalsStreamStepsRegisterAndVerifyPollThenPush() async throws {
        let transmitter = try await SSFTransmitter(token: SharedSignalsPollTests.token)
        try await EchoFixture.run(securityEvents: SharedSignalsPollTests.settings(transmitter, pollURL: nil)) { f in
            let path = ChildProcess.echorelayBinary.deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "")
            let environment = ["ECHORELAY_URL": f.server.http.baseURL, "ECHORELAY_TOKEN": LiveServer.adminToken,
                               "ECHORELAY_PUBLIC_URL": f.server.http.baseURL, "PATH": path]
            let poll = try Self.start("stream-poll.sh", in: "docs/identity-provider.md", interpreter: "bash", arguments: [],
                                      environment: environment)
            #expect(try await poll.wait(timeout: .seconds(60)) == 0, "\(String(decoding: poll.standardError, as: UTF8.self))")
            let polled = String(decoding: poll.standardOutput, as: UTF8.self)
            #expect(polled.contains("registered for poll delivery") && polled.contains("verified: the verification event arrived"), "\(polled)")
            #expect(polled.contains("is enabled"), "\(polled)")
            #expect(try await SharedSignalsPollTests.polls(transmitter).contains { $0.path.hasPrefix("/ssf/poll/") })

            let push = try Self.start("stream-push.sh", in: "docs/identity-provider.md", interpreter: "bash", arguments: [],
                                      environment: environment)
            #expect(try await push.wait(timeout: .seconds(60)) == 0, "\(String(decoding: push.standardError, as: UTF8.self))")
            let pushed = String(decoding: push.standardOutput, as: UTF8.self)
            #expect(pushed.contains("registered for push delivery") && pushed.contains("verified: the verification event arrived"), "\(pushed)")
            #expect(pushed.contains("last verification") && pushed.contains("passed"), "\(pushed)")
            #expect(try await transmitter.pushes().contains { $0.url == f.server.http.baseURL + "/v1/sets" && $0.status == 202 })
        }
    }
}
