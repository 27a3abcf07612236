import EchoRelayServer
import Foundation
import NIOHTTP1
import TestSupport
import Testing

/// `ECHORELAY_MAX_SUBSCRIPTIONS_PER_APP`: an app token cannot make more subscriptions than
/// the limit, not even by asking many times at once; admins are not limited.
@Suite struct SubscriptionLimitTests {
    static func create(_ http: HTTPTestClient, _ token: String) async throws -> TestHTTPResponse {
        let body = try JSONSerialization.data(withJSONObject: [
            "url": "https://hooks.example.com/\(UUID().uuidString)", "event_types": ["token.rotated"],
        ])
        return try await http.send(.POST, "/v1/subscriptions", headers: [
            ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"),
        ], body: Array(body))
    }

    static func appToken(_ http: HTTPTestClient, name: String) async throws -> String {
        let body = try JSONSerialization.data(withJSONObject: ["role": "app", "name": name, "reason": "test"])
        let created = try await http.send(.POST, "/v1/tokens", headers: [
            ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
        ], body: Array(body))
        return try #require(created.json?["token"] as? String, "\(created.status) \(String(decoding: created.body, as: UTF8.self))")
    }

    @Test(arguments: [StoreKind.postgres, .sqlite])
    func anAppPastTheLimitIsRefused422NamingIt(store: StoreKind) async throws {
        try await HardeningServer.withStore(store) { url in
            try await HardeningServer.run(databaseURL: url, configure: { $0.maxSubscriptionsPerApp = 3 }) { http in
                let app = try await Self.appToken(http, name: "billing")
                var ids: [String] = []
                for _ in 0..<3 {
                    let created = try await Self.create(http, app)
                    #expect(created.status == 201)
                    ids.append(try #require(created.json?["id"] as? String))
                }
                let refused = try await Self.create(http, app)
                #expect(refused.status == 422)
                #expect(refused.json?["type"] as? String == "urn:echorelay:problem:subscription-limit")
                let detail = refused.json?["detail"] as? String ?? ""
                #expect(detail.contains("3") && detail.contains("ECHORELAY_MAX_SUBSCRIPTIONS_PER_APP"), "\(detail)")
                let listed = try await http.get("/v1/subscriptions", bearer: app).json?["subscriptions"] as? [Any]
                #expect(listed?.count == 3, "nothing was stored by the refused request")

                // Another app has its own count; staff are not limited.
                #expect(try await Self.create(http, try await Self.appToken(http, name: "profile")).status == 201)
                for _ in 0..<4 { #expect(try await Self.create(http, LiveServer.adminToken).status == 201) }

                // A deleted subscription frees its place.
                let deleted = try await http.send(.DELETE, "/v1/subscriptions/\(ids[0])", headers: [("Authorization", "Bearer \(app)")])
                #expect(deleted.status == 204)
                #expect(try await Self.create(http, app).status == 201)
                #expect(try await Self.create(http, app).status == 422)
            }
        }
    }

    @Test func manyCreationsAtOnceStillStopAtTheLimit() async throws {
        try await HardeningServer.withStore(.postgres) { url in
            try await HardeningServer.run(databaseURL: url, configure: { $0.maxSubscriptionsPerApp = 3 }) { http in
                let app = try await Self.appToken(http, name: "racer")
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<12 { group.addTask { try await Self.create(http, app).status } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.filter { $0 == 201 }.count == 3, "\(statuses)")
                #expect(statuses.filter { $0 == 422 }.count == 9, "\(statuses)")
            }
        }
    }
}
