import EchoRelayCore
import EchoRelayServer
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// What `POST /v1/events` and `POST /v1/events/{id}/reverify` refuse of the `oauth2` proof:
/// exactly one proof, and only one this relay has a provider for, each `422` naming the field
/// and the missing setting, with nothing stored.
@Suite struct OAuth2IngestTests {
    static func oauth2Body(_ type: String = "token.rotated", id: String = "evt_" + UUID().uuidString, keepEcho: Bool = false) -> [UInt8] {
        eventBody(id: id, type: type, phone: type == "phone.changed" ? "+15555550100" : nil) {
            if !keepEcho { $0["echo"] = nil }
            $0["oauth2"] = ["access_token": "a-user-access-token"]
        }
    }

    static func errors(_ response: TestHTTPResponse) -> [[String: String]] {
        (response.json?["errors"] as? [[String: Any]] ?? []).map { $0.compactMapValues { $0 as? String } }
    }

    @Test func bothProofsAreRefusedNamingTheField() async throws {
        try await LiveServer.run { server in
            let response = try await server.ingest(Self.oauth2Body(keepEcho: true))
            #expect(response.status == 422)
            #expect(Self.errors(response) == [["field": "oauth2", "reason": "must not be sent with echo: an event carries exactly one of echo and oauth2"]])
            #expect(try await server.rowCounts()["events"] == 0)
        }
    }

    @Test func anOAuth2EventOnARelayWithNoOAuth2ProviderIsRefusedNamingTheSetting() async throws {
        try await LiveServer.run { server in
            let response = try await server.ingest(Self.oauth2Body())
            #expect(response.status == 422)
            #expect(Self.errors(response).first?["field"] == "oauth2")
            #expect(response.text.contains("ECHORELAY_OAUTH2_INTROSPECTION_URL"), "\(response.text)")
            #expect(!response.text.contains("a-user-access-token"))
            #expect(try await server.rowCounts()["events"] == 0)
        }
    }

    @Test func aRelayWithOAuth2OnlyRefusesEchoAndAsksForOAuth2() async throws {
        try await OAuth2Fixture.run(.postgres, userInfo: false) { f in
            let echo = try await f.ingest(eventBody())
            #expect(echo.status == 422)
            #expect(Self.errors(echo).first?["field"] == "echo")
            #expect(echo.text.contains("ECHORELAY_CONSUMER_KEY"), "\(echo.text)")

            let neither = try await f.ingest(eventBody { $0["echo"] = nil })
            #expect(neither.status == 422)
            #expect(Self.errors(neither) == [["field": "oauth2", "reason": "is required"]])
            let reverify = try await f.http.send(.POST, "/v1/events/evt_any/reverify", headers: [
                ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
            ], body: Array(#"{"reason": "r"}"#.utf8))
            #expect(reverify.status == 422)
            #expect(Self.errors(reverify) == [["field": "oauth2", "reason": "is required"]], "a re-verification asks for oauth2 too")

            // Without UserInfo, a phone number cannot be confirmed over OAuth 2.
            let phone = try await f.ingest(Self.oauth2Body("phone.changed"))
            #expect(phone.status == 422)
            #expect(Self.errors(phone).first?["field"] == "oauth2")
            #expect(phone.text.contains("ECHORELAY_OAUTH2_USERINFO_URL"), "\(phone.text)")
            #expect(try await f.ingest(Self.oauth2Body("token.rotated")).status == 202)
            let listed = try await f.http.get("/v1/events", bearer: LiveServer.adminToken).json
            #expect((listed?["events"] as? [Any])?.count == 1, "only the accepted event is stored")
        }
    }

    @Test func aReverifyWithAnAccessTokenOnARelayWithNoOAuth2ProviderIsRefused() async throws {
        try await EchoFixture.run(retrySchedule: []) { f in
            f.provider.failNext(1)
            let id = try await f.push("token.rotated", userID: "u-1", echo: try f.echo(token: "t", tokenSecret: "s"))
            #expect(try await f.outcome(of: id)["status"] as? String == "unverifiable")
            let body = try JSONSerialization.data(withJSONObject: ["reason": "r", "oauth2": ["access_token": "a-user-access-token"]])
            let answer = try await f.server.http.send(.POST, "/v1/events/\(id)/reverify", headers: [
                ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
            ], body: Array(body))
            #expect(answer.status == 422)
            #expect(answer.text.contains("ECHORELAY_OAUTH2_INTROSPECTION_URL"), "\(answer.text)")
            #expect(try await f.outcome(of: id)["status"] as? String == "unverifiable", "nothing changed")

            let both = try JSONSerialization.data(withJSONObject: ["reason": "r", "oauth2": ["access_token": "t"],
                                                                   "echo": try f.echo(token: "t", tokenSecret: "s")])
            let refused = try await f.server.http.send(.POST, "/v1/events/\(id)/reverify", headers: [
                ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
            ], body: Array(both))
            #expect(refused.status == 422)
            #expect(Self.errors(refused).map { $0["field"] } == ["oauth2"])
        }
    }
}
