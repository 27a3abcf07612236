import EchoRelayCore
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// Every class of bad request is refused with a problem+json that names the cause, and
/// leaves every table exactly as it was.
@Suite struct IngestRefusalTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let status: Int
        let problemType: String
        /// Fields the problem must name (empty when the problem is not about fields).
        let fields: [String]
        let request: @Sendable (EventSigner) throws -> (headers: [(String, String)], body: [UInt8])
        var testDescription: String { name }
    }

    static func signed(_ body: [UInt8], contentType: String = "application/json") -> @Sendable (EventSigner) throws -> (headers: [(String, String)], body: [UInt8]) {
        { signer in (try signer.headers(for: body, contentType: contentType), body) }
    }

    static func invalid(_ name: String, fields: [String], _ changes: @escaping (inout [String: Any]) -> Void) -> Case {
        Case(name: name, status: 422, problemType: "invalid-event", fields: fields,
             request: signed(eventBody(changes: changes)))
    }

    static let cases: [Case] = [
        Case(name: "no signature headers", status: 401, problemType: "invalid-signature", fields: []) { _ in
            ([("Content-Type", "application/json")], eventBody())
        },
        Case(name: "signed with an unknown secret", status: 401, problemType: "invalid-signature", fields: []) { _ in
            let body = eventBody()
            return (try EventSigner(secret: WebhookSecret.generate()).headers(for: body), body)
        },
        Case(name: "timestamp six minutes old", status: 401, problemType: "invalid-signature", fields: []) { signer in
            let body = eventBody()
            return (try signer.headers(for: body, timestamp: Date().addingTimeInterval(-360)), body)
        },
        Case(name: "body changed after signing", status: 401, problemType: "invalid-signature", fields: []) { signer in
            (try signer.headers(for: eventBody(userID: "1")), eventBody(userID: "2"))
        },
        Case(name: "body over 64 KiB", status: 413, problemType: "body-too-large", fields: [],
             request: signed(eventBody { $0["padding"] = String(repeating: "x", count: 64 * 1024) })),
        Case(name: "text/plain content type", status: 415, problemType: "unsupported-media-type", fields: [],
             request: signed(eventBody(), contentType: "text/plain")),
        Case(name: "invalid JSON", status: 400, problemType: "malformed-body", fields: [],
             request: signed(Array(#"{"id": "evt_1", "#.utf8))),
        Case(name: "invalid UTF-8", status: 400, problemType: "malformed-body", fields: [],
             request: signed([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D])),
        Case(name: "a JSON array", status: 400, problemType: "malformed-body", fields: [],
             request: signed(Array("[]".utf8))),
        invalid("id with a slash", fields: ["id"]) { $0["id"] = "evt/1" },
        invalid("id of 129 characters", fields: ["id"]) { $0["id"] = String(repeating: "a", count: 129) },
        invalid("unknown type", fields: ["type"]) { $0["type"] = "token.revoked" },
        invalid("user_id with a space", fields: ["user_id"]) { $0["user_id"] = "a b" },
        invalid("user_id of 65 characters", fields: ["user_id"]) { $0["user_id"] = String(repeating: "u", count: 65) },
        invalid("occurred_at not RFC 3339", fields: ["occurred_at"]) { $0["occurred_at"] = "23/11/2026" },
        invalid("phone.changed without a phone number", fields: ["data.phone_number"]) { $0["type"] = "phone.changed" },
        invalid("phone number not E.164", fields: ["data.phone_number"]) {
            $0["type"] = "phone.changed"
            $0["data"] = ["phone_number": "555-0100"]
        },
        invalid("no echo", fields: ["echo"]) { $0["echo"] = nil },
        invalid("relative service provider URL", fields: ["echo.service_provider"]) {
            $0["echo"] = ["service_provider": "/1.1/account.json", "authorization": "OAuth oauth_token=\"t\""]
        },
        invalid("authorization that is not OAuth", fields: ["echo.authorization"]) {
            $0["echo"] = ["service_provider": "https://api.example.com/v", "authorization": "Bearer t"]
        },
        invalid("several bad fields", fields: ["id", "type", "user_id", "occurred_at"]) {
            $0["id"] = nil
            $0["type"] = 3
            $0["user_id"] = ""
            $0["occurred_at"] = "now"
        },
    ]

    @Test(arguments: cases)
    func refusesAndStoresNothing(_ testCase: Case) async throws {
        try await LiveServer.run { server in
            // One stored event first, so "unchanged" is checked against a non-empty store.
            #expect(try await server.ingest(eventBody(userID: "1001")).status == 202)
            let before = try await server.rowCounts()

            let (headers, body) = try testCase.request(server.signer)
            let response = try await server.http.send(.POST, "/v1/events", headers: headers, body: body)

            #expect(response.status == testCase.status, "\(response.text)")
            #expect(response.headers["Content-Type"].first == "application/problem+json")
            let problem = try #require(response.json)
            #expect(problem["type"] as? String == "urn:echorelay:problem:\(testCase.problemType)")
            #expect(problem["status"] as? Int == testCase.status)
            #expect((problem["detail"] as? String)?.isEmpty == false)
            let named = (problem["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
            #expect(named == testCase.fields)
            #expect((problem["errors"] as? [[String: Any]] ?? []).allSatisfy { ($0["reason"] as? String)?.isEmpty == false })
            #expect(try await server.rowCounts() == before)
        }
    }
}
