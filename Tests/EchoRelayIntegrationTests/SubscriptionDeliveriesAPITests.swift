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
                try await Task.sleep(for: .milliseconds(300))  // the second attempt's record commits after the answer

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
}
