import EchoRelayCore
import EchoRelayServer
import Foundation
import NIOHTTP1
import Testing
import TestSupport

@Suite struct SubscriptionsAPITests {
    static func json(_ object: [String: Any]) -> [UInt8] { Array(try! JSONSerialization.data(withJSONObject: object)) }

    static func send(_ server: LiveServer, _ method: HTTPMethod, _ path: String, token: String = LiveServer.adminToken,
                     body: [String: Any]? = nil) async throws -> TestHTTPResponse {
        try await server.http.send(method, path, headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                   body: body.map(json))
    }

    /// A token made the way an operator makes one: `echorelay tokens create`.
    static func token(_ role: String, _ name: String, _ server: LiveServer) async throws -> String {
        let result = try await ChildProcess.run(["tokens", "create", "--role", role, "--name", name],
                                                environment: ["ECHORELAY_DATABASE_URL": server.database.url])
        guard result.status == 0, let token = result.stdout.split(whereSeparator: \.isWhitespace).last else {
            throw TestSetupError("tokens create failed: \(result.stderr)")
        }
        return String(token)
    }

    @Test func createShowsTheSecretOnceAndDefaultsToOrderedAndEnabled() async throws {
        try await LiveServer.run(delivery: DeliveryConfiguration()) { server in
            let created = try await Self.send(server, .POST, "/v1/subscriptions", body: [
                "url": "https://hooks.example.com/echorelay", "event_types": ["phone.changed", "token.rotated"],
                "description": "billing backend",
            ])
            #expect(created.status == 201)
            let json = try #require(created.json)
            let id = try #require(json["id"] as? String)
            #expect(id.hasPrefix("sub_"))
            #expect((json["secret"] as? String)?.hasPrefix("whsec_") == true)
            #expect(json["ordered"] as? Bool == true)
            #expect(json["enabled"] as? Bool == true)
            #expect(json["event_types"] as? [String] == ["phone.changed", "token.rotated"])
            let shown = try #require(try await Self.send(server, .GET, "/v1/subscriptions/\(id)").json)
            #expect(shown["secret"] == nil)
            #expect(shown["description"] as? String == "billing backend")

            let patched = try #require(try await Self.send(server, .PATCH, "/v1/subscriptions/\(id)", body: [
                "event_types": ["account.deactivated"], "ordered": false, "description": NSNull(),
            ]).json)
            #expect(patched["event_types"] as? [String] == ["account.deactivated"])
            #expect(patched["ordered"] as? Bool == false)
            #expect(patched["description"] is NSNull)
            #expect(patched["url"] as? String == "https://hooks.example.com/echorelay")
        }
    }

    @Test(arguments: [
        "http://hooks.example.com/x", "https://10.0.0.1/x", "https://127.0.0.1/x", "https://localhost/x", "https://[::1]/x",
        "https://[::ffff:127.0.0.1]/x", "https://169.254.169.254/latest/meta-data", "https://100.64.0.1/", "https://2130706433/",
        "https://user@hooks.example.com/", "ftp://hooks.example.com/", "not a url",
    ])
    func refusesURLsThatPointInsideOrAreNotHTTPS(url: String) async throws {
        try await LiveServer.run(delivery: DeliveryConfiguration()) { server in
            let response = try await Self.send(server, .POST, "/v1/subscriptions", body: ["url": url, "event_types": ["token.rotated"]])
            #expect(response.status == 422)
            let errors = response.json?["errors"] as? [[String: Any]] ?? []
            #expect(errors.map { $0["field"] as? String } == ["url"])
            #expect(try await server.database.withClient { try await $0.count("subscriptions") } == 0)
        }
    }

    /// With ECHORELAY_PRIVATE_SUBSCRIBERS, the listed internal hosts and ranges may subscribe
    /// over https; other private addresses, and plain http, are still refused.
    @Test func theAllowListLetsAnInternalNetworkSubscribeOverHTTPSOnly() async throws {
        let allowList = try PrivateSubscriberAllowList(parsing: "hooks.internal,10.20.0.0/16")
        try await LiveServer.run(delivery: DeliveryConfiguration(privateSubscribers: allowList)) { server in
            for url in ["https://hooks.internal/echorelay", "https://10.20.1.2/echorelay"] {
                let created = try await Self.send(server, .POST, "/v1/subscriptions", body: ["url": url, "event_types": ["token.rotated"]])
                #expect(created.status == 201, "\(url): \(created.text)")
            }
            for url in ["http://hooks.internal/echorelay", "https://10.21.1.2/", "https://other.internal/", "https://127.0.0.1/"] {
                let refused = try await Self.send(server, .POST, "/v1/subscriptions", body: ["url": url, "event_types": ["token.rotated"]])
                #expect(refused.status == 422, "\(url): \(refused.text)")
            }
            #expect(try await server.database.withClient { try await $0.count("subscriptions") } == 2)
        }
    }

    @Test func namesEveryBadField() async throws {
        try await LiveServer.run { server in
            let response = try await Self.send(server, .POST, "/v1/subscriptions", body: [
                "event_types": ["token.revoked"], "ordered": "yes", "description": 5,
            ])
            #expect(response.status == 422)
            let fields = (response.json?["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
            #expect(fields == ["url", "event_types", "description", "ordered"])
            let empty = try await Self.send(server, .POST, "/v1/subscriptions", body: ["url": "https://a.example.com/", "event_types": [] as [String]])
            #expect(empty.status == 422)
            let malformed = try await server.http.send(.POST, "/v1/subscriptions", headers: [("Authorization", "Bearer \(LiveServer.adminToken)")], body: Array("{".utf8))
            #expect(malformed.status == 400)
        }
    }

    @Test func listsInPagesWithACursor() async throws {
        try await LiveServer.run { server in
            var created: [String] = []
            for index in 0..<5 {
                let json = try await Self.send(server, .POST, "/v1/subscriptions", body: ["url": "http://127.0.0.1:9/\(index)", "event_types": ["token.rotated"]]).json
                created.append(try #require(json?["id"] as? String))
            }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let path = "/v1/subscriptions?limit=2" + (cursor.map { "&cursor=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? "")
                let page = try #require(try await Self.send(server, .GET, path).json)
                let items = try #require(page["subscriptions"] as? [[String: Any]])
                #expect(items.count <= 2)
                #expect(items.allSatisfy { $0["secret"] == nil })
                seen += items.compactMap { $0["id"] as? String }
                cursor = page["next_cursor"] as? String
            } while cursor != nil
            #expect(seen == created)
            #expect(try await Self.send(server, .GET, "/v1/subscriptions?cursor=bogus").status == 400)
            #expect(try await Self.send(server, .GET, "/v1/subscriptions?limit=0").status == 400)
        }
    }

    @Test func appTokensSeeOnlyTheirOwnSubscriptions() async throws {
        try await LiveServer.run { server in
            let first = try await Self.token("app", "billing", server)
            let second = try await Self.token("app", "messaging", server)
            let support = try await Self.token("support", "helpdesk", server)
            let mine = try #require(try await Self.send(server, .POST, "/v1/subscriptions", token: first,
                                                       body: ["url": "http://127.0.0.1:9/a", "event_types": ["token.rotated"]]).json?["id"] as? String)
            _ = try await Self.send(server, .POST, "/v1/subscriptions", token: second, body: ["url": "http://127.0.0.1:9/b", "event_types": ["token.rotated"]])

            func ids(_ token: String) async throws -> [String] {
                (try await Self.send(server, .GET, "/v1/subscriptions", token: token).json?["subscriptions"] as? [[String: Any]] ?? [])
                    .compactMap { $0["id"] as? String }
            }
            #expect(try await ids(first) == [mine])
            #expect(try await ids(second).count == 1)
            #expect(try await ids(second) != [mine])
            #expect(try await ids(LiveServer.adminToken).count == 2)

            for (method, path) in [(HTTPMethod.GET, ""), (.PATCH, ""), (.DELETE, ""), (.POST, "/disable"), (.POST, "/rotate-secret")] {
                let response = try await Self.send(server, method, "/v1/subscriptions/\(mine)\(path)", token: second, body: method == .PATCH ? ["ordered": false] : nil)
                #expect(response.status == 404, "another app's \(method) \(path) must look like an unknown id")
            }
            #expect(try await Self.send(server, .GET, "/v1/subscriptions/\(mine)", token: first).status == 200)
            #expect(try await Self.send(server, .GET, "/v1/subscriptions", token: support).status == 403)
            #expect(try await server.http.get("/v1/subscriptions").status == 401)
        }
    }
}
