import EchoRelayCore
import Foundation
import NIOHTTP1
import Testing
import TestSupport

@Suite struct EventsAPITests {
    @Test func showsAStoredEventToTheAdminWithoutEchoCredentials() async throws {
        try await LiveServer.run { server in
            let body = eventBody(id: "evt_show", type: "phone.changed", userID: "u-9", phone: "+447700900123")
            #expect(try await server.ingest(body).status == 202)

            let response = try await server.http.get("/v1/events/evt_show", bearer: LiveServer.adminToken)
            #expect(response.status == 200)
            let json = try #require(response.json)
            #expect(json["id"] as? String == "evt_show")
            #expect(json["type"] as? String == "phone.changed")
            #expect(json["user_id"] as? String == "u-9")
            #expect(json["sequence"] as? Int == 1)
            #expect(json["occurred_at"] as? String == "2026-11-23T10:15:30Z")
            #expect(json["status"] as? String == "pending")
            let receivedAt = try #require(json["received_at"] as? String)
            #expect(abs((RFC3339.parse(receivedAt) ?? .distantPast).timeIntervalSinceNow) < 60)
            #expect(!response.text.contains("OAuth"))
            // No echo credentials: the one "echo" is the path's value (issue 48's `path`).
            #expect(json["path"] as? String == "echo")
            #expect(!response.text.replacingOccurrences(of: #""path":"echo""#, with: "").contains("echo"))
        }
    }

    @Test func refusesRequestsWithoutAValidAdminToken() async throws {
        try await LiveServer.run { server in
            #expect(try await server.ingest(eventBody(id: "evt_auth")).status == 202)
            for token in [nil, "wrong-token", ""] as [String?] {
                let response = try await server.http.get("/v1/events/evt_auth", bearer: token)
                #expect(response.status == 401)
                #expect(response.headers["WWW-Authenticate"].first == "Bearer")
                #expect(response.headers["Content-Type"].first == "application/problem+json")
            }
            let basic = try await server.http.send(.GET, "/v1/events/evt_auth", headers: [("Authorization", "Basic YWRtaW46YWRtaW4=")])
            #expect(basic.status == 401)
        }
    }

    @Test func answersNotFoundForAnUnknownEvent() async throws {
        try await LiveServer.run { server in
            let response = try await server.http.get("/v1/events/evt_missing", bearer: LiveServer.adminToken)
            #expect(response.status == 404)
            #expect(response.json?["type"] as? String == "urn:echorelay:problem:not-found")
        }
    }
}

