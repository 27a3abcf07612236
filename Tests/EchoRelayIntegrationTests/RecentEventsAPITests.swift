import EchoRelayStandIns
import Foundation
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// `GET /v1/events`: support's view across users, through the HTTP API.
@Suite struct RecentEventsAPITests {
    static func list(_ f: EchoFixture, _ query: String, token: String = LiveServer.adminToken) async throws -> TestHTTPResponse {
        try await f.server.http.get("/v1/events" + query, bearer: token)
    }

    static func ids(_ response: TestHTTPResponse) -> [String] {
        (response.json?["events"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
    }

    @Test func supportFindsTheRejectedDeactivationsOfEveryUserNewestFirst() async throws {
        try await EchoFixture.run { f in
            let rotated = try await f.pushVerified("token.rotated", userID: "u-1", session: try f.session("u-1"))
            let rotatedID = try #require(rotated["id"] as? String)
            // A deactivation signed with a token the provider never confirmed for this user.
            let forged = f.provider.issueToken(for: "u-1")
            f.provider.addAccount(userID: "u-2", phoneNumber: nil)
            f.provider.expire(token: forged.token)
            let rejectedID = try await f.push("account.deactivated", userID: "u-2", echo: try f.echo(token: forged.token, tokenSecret: forged.secret))
            _ = try await f.outcome(of: rejectedID)

            let all = try await Self.list(f, "")
            #expect(all.status == 200, "\(all.text)")
            #expect(Self.ids(all) == [rejectedID, rotatedID])
            #expect(all.json?["next_cursor"] is NSNull)

            let rejected = try await Self.list(f, "?type=account.deactivated&status=rejected&reason=unknown_token&since=2020-01-01T00:00:00Z")
            #expect(Self.ids(rejected) == [rejectedID])
            let event = try #require((rejected.json?["events"] as? [[String: Any]])?.first)
            #expect(event["user_id"] as? String == "u-2")
            #expect(event["reason"] as? String == "unknown_token")
            #expect(Self.ids(try await Self.list(f, "?status=unverifiable")).isEmpty)

            // One page at a time: the cursor leads to the next, and the last has none.
            let first = try await Self.list(f, "?limit=1")
            #expect(Self.ids(first) == [rejectedID])
            let cursor = try #require(first.json?["next_cursor"] as? String)
            let second = try await Self.list(f, "?limit=1&cursor=" + (cursor.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? cursor))
            #expect(Self.ids(second) == [rotatedID])
            #expect(second.json?["next_cursor"] is NSNull)
        }
    }

    @Test func aBadFilterIsRefusedNamingItAndAnAppTokenIsForbidden() async throws {
        try await LiveServer.run { server in
            let bad = try await server.http.get("/v1/events?status=lost&reason=nope&cursor=12&until=2020-01-01T00:00:00Z&since=2021-01-01T00:00:00Z",
                                                bearer: LiveServer.adminToken)
            #expect(bad.status == 400)
            let fields = Set(((bad.json?["errors"] as? [[String: Any]]) ?? []).compactMap { $0["field"] as? String })
            #expect(fields == ["status", "reason", "cursor", "until"], "\(bad.text)")
            let app = try await AccessTokenTests.create(role: "app", name: "billing", in: server.database)
            #expect(try await server.http.get("/v1/events", bearer: app.token).status == 403)
            #expect(try await server.http.get("/v1/events").status == 401)
        }
    }
}
