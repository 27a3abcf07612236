import EchoRelayAPI
import EchoRelayCore
import Foundation
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

@Suite struct IngestTests {
    @Test func acceptsASignedEventOnlyAfterStoringItAndItsWorkItem() async throws {
        try await LiveServer.run { server in
            let body = eventBody(id: "evt_1", type: "phone.changed", userID: "42", phone: "+15555550100")
            let response = try await server.ingest(body)
            #expect(response.status == 202)
            #expect(response.headers["Content-Type"].first == "application/json")
            let json = try #require(response.json)
            #expect(json["id"] as? String == "evt_1")
            #expect(json["sequence"] as? Int == 1)
            #expect(json["status"] as? String == "accepted")
            // Written by hand for speed, and still the wire type the CLI and the demo decode.
            #expect(try JSONDecoder().decode(API.IngestAcknowledgement.self, from: response.body)
                == API.IngestAcknowledgement(id: "evt_1", sequence: 1))
            #expect(try await server.rowCounts() == ["events": 1, "work_items": 1, "user_sequences": 1])
            let kinds = try await server.database.withClient { client in
                var kinds: [String] = []
                for try await (kind, eventID) in try await client.query("SELECT kind, event_id FROM work_items")
                    .decode((String, String).self) { kinds.append("\(kind):\(eventID)") }
                return kinds
            }
            #expect(kinds == ["verify:evt_1"])
        }
    }

    @Test func aRetryWithTheSameBodyGetsTheFirstReceiptAndStoresNothing() async throws {
        try await LiveServer.run { server in
            let body = eventBody(id: "evt_retry", userID: "7")
            let first = try await server.ingest(body)
            _ = try await server.ingest(eventBody(userID: "7"))  // a later event for the same user
            let counts = try await server.rowCounts()
            let again = try await server.ingest(body)
            #expect(first.status == 202)
            #expect(again.status == 202)
            #expect(again.json?["sequence"] as? Int == 1)
            #expect(again.json?["status"] as? String == "accepted")
            #expect(try await server.rowCounts() == counts)
        }
    }

    @Test func theSameBodyWithOtherSpacingAndKeyOrderIsTheSameEvent() async throws {
        try await LiveServer.run { server in
            let compact = #"{"id":"evt_k","type":"token.rotated","user_id":"u1","occurred_at":"2026-11-23T10:15:30Z","echo":{"service_provider":"https://api.example.com/v","authorization":"OAuth oauth_token=\"t\""}}"#
            let spaced = #"{ "user_id" : "u1", "echo": { "authorization": "OAuth oauth_token=\"t\"", "service_provider": "https://api.example.com/v" }, "id": "evt_k", "occurred_at": "2026-11-23T10:15:30Z", "type": "token.rotated" }"#
            #expect(try await server.ingest(Array(compact.utf8)).status == 202)
            let again = try await server.ingest(Array(spaced.utf8))
            #expect(again.status == 202)
            #expect(again.json?["sequence"] as? Int == 1)
            #expect(try await server.rowCounts()["events"] == 1)
        }
    }

    @Test func theSameIDWithAnotherBodyIsAConflictThatStoresNothing() async throws {
        try await LiveServer.run { server in
            #expect(try await server.ingest(eventBody(id: "evt_c", userID: "1")).status == 202)
            let counts = try await server.rowCounts()
            let conflict = try await server.ingest(eventBody(id: "evt_c", userID: "2"))
            #expect(conflict.status == 409)
            #expect(conflict.headers["Content-Type"].first == "application/problem+json")
            #expect(conflict.json?["type"] as? String == "urn:echorelay:problem:event-id-conflict")
            #expect(try await server.rowCounts() == counts)
        }
    }

    @Test func everyUsersSequencesAreExactlyOneToNUnderConcurrency() async throws {
        try await LiveServer.run { server in
            let clients = 8, eventsPerClient = 50, users = 5
            let receipts = try await withThrowingTaskGroup(of: [(String, Int)].self) { group in
                for client in 0..<clients {
                    group.addTask {
                        var receipts: [(String, Int)] = []
                        for index in 0..<eventsPerClient {
                            let user = "user-\((client * eventsPerClient + index) % users)"
                            let response = try await server.ingest(eventBody(id: "evt_\(client)_\(index)", userID: user))
                            guard response.status == 202, let sequence = response.json?["sequence"] as? Int else {
                                throw TestSetupError("ingest answered \(response.status): \(response.text)")
                            }
                            receipts.append((user, sequence))
                        }
                        return receipts
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(receipts.count == clients * eventsPerClient)
            let acknowledged = Dictionary(grouping: receipts, by: \.0).mapValues { $0.map(\.1).sorted() }
            let stored = try await server.database.withClient { client in
                var byUser: [String: [Int]] = [:]
                for try await (user, sequence) in try await client.query("SELECT user_id, sequence FROM events")
                    .decode((String, Int64).self) { byUser[user, default: []].append(Int(sequence)) }
                return byUser.mapValues { $0.sorted() }
            }
            for user in 0..<users {
                let expected = Array(1...(clients * eventsPerClient / users))
                #expect(acknowledged["user-\(user)"] == expected)
                #expect(stored["user-\(user)"] == expected)
            }
        }
    }

    @Test func eventsAreSignedWithAnyActiveSecret() async throws {
        let old = LiveServer.ingestSecret
        let new = WebhookSecret.generate()
        try await LiveServer.run(ingestSecrets: [new, old]) { server in
            let body = eventBody()
            for secret in [old, new] {
                let headers = try EventSigner(secret: secret).headers(for: body)
                #expect(try await server.http.send(.POST, "/v1/events", headers: headers, body: body).status == 202)
            }
        }
    }
}
