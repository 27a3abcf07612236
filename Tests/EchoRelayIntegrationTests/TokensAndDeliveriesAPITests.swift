import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// `/v1/tokens` (admin: tokens issued, listed and revoked while the server runs) and
/// `GET /v1/deliveries/{webhook_id}` ("the backend got `msg_…`: what was it?"), on both
/// stores, through the API and through the command line.
@Suite struct TokensAndDeliveriesAPITests {
    static let stores: [StoreKind] = [.postgres, .sqlite]

    static func send(_ f: OAuth2Fixture, _ method: HTTPMethod, _ path: String, token: String = LiveServer.adminToken,
                     json: [String: Any]? = nil) async throws -> TestHTTPResponse {
        var headers = [("Authorization", "Bearer \(token)")]
        var body: [UInt8]?
        if let json {
            headers.append(("Content-Type", "application/json"))
            body = Array(try JSONSerialization.data(withJSONObject: json))
        }
        return try await f.http.send(method, path, headers: headers, body: body)
    }

    /// A token made through the API: its id and the token.
    static func issue(_ f: OAuth2Fixture, role: String, name: String) async throws -> (id: String, token: String) {
        let created = try await send(f, .POST, "/v1/tokens", json: ["role": role, "name": name, "reason": "test \(name)"])
        #expect(created.status == 201, "\(created.text)")
        #expect(created.headers.first(name: "Cache-Control") == "no-store")
        let json = try #require(created.json)
        return (try #require(json["id"] as? String), try #require(json["token"] as? String))
    }

    @Test(arguments: stores)
    func anAdminIssuesListsAndRevokesTokensWhileTheServerRunsAndEachIsAudited(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let (supportID, support) = try await Self.issue(f, role: "support", name: "Robin from support")
            #expect(support.hasPrefix("er_"))
            #expect(try await f.http.get("/v1/events?limit=1", bearer: support).status == 200, "the new token works at once")

            let list = try #require(try await Self.send(f, .GET, "/v1/tokens").json?["tokens"] as? [[String: Any]])
            let listed = try #require(list.first { $0["id"] as? String == supportID })
            #expect(listed["name"] as? String == "Robin from support" && listed["role"] as? String == "support")
            #expect(listed["token"] == nil && listed["revoked_at"] is NSNull, "never the token itself")
            #expect(!(try await Self.send(f, .GET, "/v1/tokens").text.contains(support)))

            // Only admin; every bad field named.
            #expect(try await Self.send(f, .GET, "/v1/tokens", token: support).status == 403)
            #expect(try await Self.send(f, .POST, "/v1/tokens", token: support, json: ["role": "admin", "name": "x"]).status == 403)
            let bad = try await Self.send(f, .POST, "/v1/tokens", json: ["role": "root", "name": " padded", "colour": "red"])
            #expect(bad.status == 422)
            let fields = (bad.json?["errors"] as? [[String: Any]])?.compactMap { $0["field"] as? String }
            #expect(fields == ["role", "name", "colour"], "\(bad.text)")

            let revoked = try await Self.send(f, .POST, "/v1/tokens/\(supportID)/revoke", json: ["reason": "left the team"])
            #expect(revoked.status == 200 && revoked.json?["revoked_at"] is String, "\(revoked.text)")
            #expect(try await f.http.get("/v1/events?limit=1", bearer: support).status == 401, "refused at once")
            let again = try await Self.send(f, .POST, "/v1/tokens/\(supportID)/revoke")
            #expect(again.status == 200 && again.json?["revoked_at"] as? String == revoked.json?["revoked_at"] as? String)
            #expect(try await Self.send(f, .POST, "/v1/tokens/tok_nothing/revoke").status == 404)

            let audit = try #require(try await Self.send(f, .GET, "/v1/audit?target=\(supportID)").json?["entries"] as? [[String: Any]])
            #expect(Set(audit.compactMap { $0["action"] as? String }) == ["token.create", "token.revoke"], "revoking twice is one entry")
            #expect(audit.contains { $0["action"] as? String == "token.revoke" && $0["reason"] as? String == "left the team" })
        }
    }

    /// On the embedded store a running serve holds the file: `echorelay tokens` goes through
    /// its API with an admin token, so a support token needs no downtime. On PostgreSQL it
    /// works on the database, as before.
    @Test(arguments: stores)
    func theTokensCommandsWorkWhileServeRuns(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let environment = ["ECHORELAY_DATABASE_URL": f.location, "ECHORELAY_URL": f.http.baseURL,
                               "ECHORELAY_TOKEN": LiveServer.adminToken]
            let created = try await ChildProcess.run(["tokens", "create", "--role", "support", "--name", "Sam"], environment: environment)
            #expect(created.status == 0, "\(created.stderr)")
            let token = try #require(created.stdout.split(whereSeparator: \.isWhitespace).last.map(String.init))
            #expect(try await f.http.get("/v1/events?limit=1", bearer: token).status == 200)
            #expect(store != .sqlite || created.stderr.contains("asking it at \(f.http.baseURL)"), "\(created.stderr)")

            let listed = try await ChildProcess.run(["tokens", "list", "--json"], environment: environment)
            #expect(listed.status == 0, "\(listed.stderr)")
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
            let id = try #require(rows.first { $0["name"] as? String == "Sam" }?["id"] as? String)
            #expect(!listed.stdout.contains(token))

            let revoked = try await ChildProcess.run(["tokens", "revoke", id], environment: environment)
            #expect(revoked.status == 0 && revoked.stdout.contains("revoked support token \"Sam\""), "\(revoked.stdout)\(revoked.stderr)")
            #expect(try await f.http.get("/v1/events?limit=1", bearer: token).status == 401)
            let twice = try await ChildProcess.run(["tokens", "revoke", id], environment: environment)
            #expect(twice.status == 0 && twice.stdout.contains("was already revoked"), "\(twice.stdout)\(twice.stderr)")

            if store == .sqlite {
                var noToken = environment
                noToken["ECHORELAY_TOKEN"] = nil
                let refused = try await ChildProcess.run(["tokens", "list"], environment: noToken)
                #expect(refused.status == 1)
                #expect(refused.stderr.contains("in use by a running echorelay serve") && refused.stderr.contains("hint: set ECHORELAY_TOKEN"),
                        "\(refused.stderr)")
            }
        }
    }

    @Test(arguments: stores)
    func aDeliveryIsFoundByItsWebhookIDByStaffAndByItsOwnAppOnly(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let (_, billing) = try await Self.issue(f, role: "app", name: "billing")
            let (_, messaging) = try await Self.issue(f, role: "app", name: "messaging")
            let (_, support) = try await Self.issue(f, role: "support", name: "helpdesk")
            let own = try await Self.send(f, .POST, "/v1/subscriptions", token: billing, json: [
                "url": f.subscriber.url(), "event_types": ["token.rotated"], "description": "billing backend",
            ])
            #expect(own.status == 201, "\(own.text)")
            let ownID = try #require(own.json?["id"] as? String)

            let session = try await f.session("lookup-1")
            let event = try await f.pushed("token.rotated", userID: "lookup-1", token: session)
            let eventID = try #require(event["id"] as? String)
            _ = try await f.deliveries(of: eventID, count: 2)
            var webhookIDs: [String: String] = [:]
            let deadline = ContinuousClock.now + .seconds(20)
            repeat {
                let deliveries = try await f.outcome(of: eventID)["deliveries"] as? [[String: Any]] ?? []
                for delivery in deliveries where delivery["status"] as? String == "delivered" && !(delivery["attempts"] as? [Any] ?? []).isEmpty {
                    webhookIDs[delivery["subscription_id"] as? String ?? ""] = delivery["webhook_id"] as? String
                }
                if webhookIDs.count == 2 { break }
                try await Task.sleep(for: .milliseconds(100))
            } while ContinuousClock.now < deadline
            let ownWebhook = try #require(webhookIDs[ownID])
            let otherWebhook = try #require(webhookIDs.first { $0.key != ownID }?.value)

            let found = try await f.http.get("/v1/deliveries/\(ownWebhook)", bearer: billing)
            #expect(found.status == 200, "\(found.text)")
            let json = try #require(found.json)
            #expect(json["webhook_id"] as? String == ownWebhook && json["subscription_id"] as? String == ownID)
            #expect((json["event"] as? [String: Any])?["id"] as? String == eventID)
            #expect((json["event"] as? [String: Any])?["user_id"] as? String == "lookup-1")
            #expect((json["subscription"] as? [String: Any])?["description"] as? String == "billing backend")
            let deliveries = try #require(json["deliveries"] as? [[String: Any]])
            #expect(deliveries.count == 1 && deliveries[0]["replay_id"] is NSNull && deliveries[0]["status"] as? String == "delivered")
            #expect(((deliveries[0]["attempts"] as? [[String: Any]])?.first?["status_code"] as? Int) == 200)
            #expect((json["subscription"] as? [String: Any])?["secret"] == nil, "never the signing secret")

            #expect(try await f.http.get("/v1/deliveries/\(otherWebhook)", bearer: billing).status == 404, "another subscription's: as if none")
            #expect(try await f.http.get("/v1/deliveries/\(ownWebhook)", bearer: messaging).status == 404)
            #expect(try await f.http.get("/v1/deliveries/\(otherWebhook)", bearer: support).status == 200, "staff see any")
            #expect(try await f.http.get("/v1/deliveries/msg_00000000000000000000000000", bearer: support).status == 404)
            #expect(try await f.http.get("/v1/deliveries/\(ownWebhook)").status == 401)

            // The command line, with the support token.
            let shown = try await ChildProcess.run(["deliveries", "show", ownWebhook],
                                                   environment: ["ECHORELAY_URL": f.http.baseURL, "ECHORELAY_TOKEN": support])
            #expect(shown.status == 0, "\(shown.stderr)")
            for text in [eventID, "lookup-1", "token.rotated", "\(ownID): billing backend", "delivery 1 of 1, the original", "200"] {
                #expect(shown.stdout.contains(text), "\(text) missing:\n\(shown.stdout)")
            }
            let unknown = try await ChildProcess.run(["deliveries", "show", "msg_nothing"],
                                                     environment: ["ECHORELAY_URL": f.http.baseURL, "ECHORELAY_TOKEN": support])
            #expect(unknown.status == 1 && unknown.stderr.contains("no delivery with webhook-id") && unknown.stderr.contains("hint: check the webhook-id"),
                    "\(unknown.stderr)")
        }
    }
}
