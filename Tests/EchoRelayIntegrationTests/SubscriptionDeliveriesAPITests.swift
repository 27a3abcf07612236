import EchoRelayCore
import EchoRelayServer
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// `GET /v1/subscriptions/{id}/deliveries` and `.../attempts`: an app backend reads what
/// happened to its own subscription's deliveries; another app gets 404, never 403.
@Suite struct SubscriptionDeliveriesAPITests {
    @Test func anAppReadsItsOwnDeliveriesAndAttemptsAndAnotherAppGetsNotFound() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let billing = try await SubscriptionsAPITests.token("app", "billing", f.server)
                let messaging = try await SubscriptionsAPITests.token("app", "messaging", f.server)
                let support = try await SubscriptionsAPITests.token("support", "helpdesk", f.server)
                let subscription = try await f.subscribe(url: subscriber.url(), token: billing)
                let id = try #require(subscription["id"] as? String)
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let rotated = try await f.pushVerified("token.rotated", userID: "sd1", session: try f.session("sd1"))
                let changed = try await f.pushVerified("phone.changed", userID: "sd2", phone: "+15550009999",
                                                       session: try f.session("sd2", phone: "+15550009999"))
                try await subscriber.waitForDeliveries(count: 2, within: .seconds(20))
                // An attempt's record commits after the answer: wait for it rather than guess how long it takes.
                for event in [rotated, changed] { _ = try await f.finalDeliveries(of: try #require(event["id"] as? String), count: 1) }

                func get(_ path: String, _ token: String) async throws -> TestHTTPResponse {
                    try await f.server.http.send(.GET, path, headers: [("Authorization", "Bearer \(token)")])
                }
                func deliveries(_ query: String, _ token: String = billing) async throws -> [[String: Any]] {
                    let response = try await get("/v1/subscriptions/\(id)/deliveries\(query)", token)
                    #expect(response.status == 200, "\(response.text)")
                    return response.json?["deliveries"] as? [[String: Any]] ?? []
                }
                let all = try await deliveries("")
                #expect(all.compactMap { $0["event_id"] as? String } == [changed["id"] as? String, rotated["id"] as? String],
                        "newest first")
                #expect(all.allSatisfy { $0["status"] as? String == "delivered" && $0["attempts"] as? Int == 1 })
                #expect(all.first?["user_id"] as? String == "sd2" && all.first?["type"] as? String == "phone.changed")
                #expect(try await deliveries("?user_id=sd1").compactMap { $0["event_id"] as? String } == [rotated["id"] as? String])
                #expect(try await deliveries("?type=phone.changed").count == 1)
                #expect(try await deliveries("?status=pending").isEmpty)
                #expect(try await deliveries("?since=2999-01-01T00:00:00Z").isEmpty)
                #expect(try await deliveries("", support).count == 2, "staff read any subscription's")

                let page = try #require(try await get("/v1/subscriptions/\(id)/deliveries?limit=1", billing).json)
                let cursor = try #require(page["next_cursor"] as? String)
                let next = try #require(try await get("/v1/subscriptions/\(id)/deliveries?limit=1&cursor=\(cursor)", billing).json)
                #expect((next["deliveries"] as? [[String: Any]])?.first?["event_id"] as? String == rotated["id"] as? String)
                #expect(next["next_cursor"] is NSNull)

                let deliveryID = try #require(all.first?["id"] as? Int)
                let attempts = try #require(try await get("/v1/subscriptions/\(id)/deliveries/\(deliveryID)/attempts", billing).json)
                let attempt = try #require((attempts["attempts"] as? [[String: Any]])?.first)
                #expect(attempt["status_code"] as? Int == 200 && attempt["error_kind"] is NSNull)
                #expect((attempt["duration_ms"] as? Int).map { $0 >= 0 } == true)

                for path in ["/v1/subscriptions/\(id)/deliveries", "/v1/subscriptions/\(id)/deliveries/\(deliveryID)/attempts"] {
                    #expect(try await get(path, messaging).status == 404, "another app's \(path) looks like an unknown id")
                }
                #expect(try await get("/v1/subscriptions/\(id)/deliveries/999999/attempts", billing).status == 404)
                #expect(try await get("/v1/subscriptions/\(id)/deliveries/abc/attempts", billing).status == 404)
                let bad = try await get("/v1/subscriptions/\(id)/deliveries?status=sent&limit=0", billing)
                #expect(bad.status == 400)
                let fields = (bad.json?["errors"] as? [[String: Any]])?.compactMap { $0["field"] as? String }
                #expect(fields == ["status", "limit"])
                #expect(try await f.server.http.get("/v1/subscriptions/\(id)/deliveries").status == 401)
            }
        }
    }

    /// `POST /v1/subscriptions/{id}/test`: a signed `echorelay.test` delivery reaches a real
    /// subscriber at once, verifies with the Standard Webhooks reference library, and its
    /// answer comes back; a subscriber that fails is reported, not retried.
    @Test func aTestDeliveryReachesTheSubscriberSignedAndReportsItsAnswer() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let billing = try await SubscriptionsAPITests.token("app", "billing", f.server)
                let messaging = try await SubscriptionsAPITests.token("app", "messaging", f.server)
                let subscription = try await f.subscribe(url: subscriber.url(), token: billing)
                let id = try #require(subscription["id"] as? String)
                let secret = try #require(subscription["secret"] as? String)
                subscriber.setSecrets([secret])
                func test(_ token: String) async throws -> TestHTTPResponse {
                    try await f.server.http.send(.POST, "/v1/subscriptions/\(id)/test", headers: [("Authorization", "Bearer \(token)")])
                }

                let answer = try await test(billing)
                #expect(answer.status == 200, "\(answer.text)")
                let json = try #require(answer.json)
                #expect(json["delivered"] as? Bool == true)
                let attempt = try #require(json["attempt"] as? [String: Any])
                #expect(attempt["status_code"] as? Int == 200 && (attempt["duration_ms"] as? Int).map { $0 >= 0 } == true)
                let received = try #require(try await subscriber.waitForDeliveries(count: 1, within: .seconds(5)).first)
                #expect(received.webhookID == json["webhook_id"] as? String)
                #expect(received.object?["type"]?.stringValue == "echorelay.test")
                #expect(received.object?["subscription_id"]?.stringValue == id)
                #expect(received.signedBy == [secret])
                let verified = try StandardWebhooksCheck.verify(secret: secret, headers: received.headers, body: received.body)
                #expect(verified == nil, "standardwebhooks refused the test delivery: \(verified ?? "")")

                // No user, no sequence, no delivery row: the subscription's list stays empty.
                let list = try await f.server.http.send(.GET, "/v1/subscriptions/\(id)/deliveries", headers: [("Authorization", "Bearer \(billing)")])
                #expect((list.json?["deliveries"] as? [Any])?.isEmpty == true)

                subscriber.script([.status(500, body: "broken")])
                let failing = try #require(try await test(billing).json)
                #expect(failing["delivered"] as? Bool == false)
                #expect((failing["attempt"] as? [String: Any])?["status_code"] as? Int == 500)
                #expect((failing["attempt"] as? [String: Any])?["response_head"] as? String == "broken")
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await subscriber.waitForDeliveries(count: 2, within: .seconds(1)).count == 2, "not retried")

                #expect(try await test(messaging).status == 404, "another app's subscription looks unknown")
                let audit = try #require(try await f.server.http.send(.GET, "/v1/audit?action=subscription.test",
                                                                      headers: [("Authorization", "Bearer \(LiveServer.adminToken)")]).json)
                #expect((audit["entries"] as? [[String: Any]])?.count == 2)
            }
        }
    }
}

/// The Standard Webhooks reference library (Python `standardwebhooks`) verifying a delivery.
enum StandardWebhooksCheck {
    /// Nil when the library accepts the delivery; its error otherwise.
    static func verify(secret: String, headers: [String: String], body: Data) throws -> String? {
        let input = try JSONSerialization.data(withJSONObject: [
            "secret": secret, "headers": headers, "body": body.base64EncodedString(),
        ])
        let script = """
            import base64, json, sys
            try:
                from standardwebhooks.webhooks import Webhook
            except ImportError:
                sys.exit(3)
            case = json.load(sys.stdin)
            headers = {name.lower(): value for name, value in case["headers"].items()}
            try:
                Webhook(case["secret"]).verify(base64.b64decode(case["body"]), headers)
            except Exception as error:
                print(repr(error))
            """
        let run = try Spawned("/usr/bin/env", ["python3", "-c", script], input: input)
        run.waitUntilExit()
        switch run.status ?? -1 {
        case 0:
            let output = String(decoding: run.standardOutput, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return output.isEmpty ? nil : output
        case 3: throw TestSetupError("the Python package standardwebhooks is missing: run scripts/test (it installs it into .build/venv)")
        default: throw TestSetupError("python3 failed: \(String(decoding: run.standardError, as: UTF8.self))")
        }
    }
}
