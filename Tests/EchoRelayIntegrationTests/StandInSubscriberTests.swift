import AsyncHTTPClient
import EchoRelayCore
import EchoRelayStandIns
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import TestSupport

/// The stand-in subscriber itself: it records what arrives, checks signatures with its own
/// code (held here against EchoRelay's signer), answers from its script and never blocks
/// teardown. No database needed.
@Suite struct StandInSubscriberTests {
    static func signedHeaders(
        body: [UInt8], secrets: [String], id: String = "msg_" + UUID().uuidString, timestamp: Date = Date()
    ) throws -> [(String, String)] {
        let seconds = Int64(timestamp.timeIntervalSince1970)
        let signature = StandardWebhooks.signatureHeaderValue(
            id: id, timestamp: seconds, body: body, secrets: try secrets.map { try WebhookSecret($0) }
        )
        return [
            ("Content-Type", "application/json"), ("User-Agent", "EchoRelay-Test/1"),
            ("webhook-id", id), ("webhook-timestamp", String(seconds)), ("webhook-signature", signature),
        ]
    }

    @Test func recordsASignedDeliveryAndNamesEverySecretThatSignedIt() async throws {
        let old = WebhookSecret.generate(), new = WebhookSecret.generate(), unrelated = WebhookSecret.generate()
        let subscriber = StandInSubscriber(secrets: [old, new, unrelated])
        try await subscriber.run { subscriber in
            let http = HTTPTestClient(port: subscriber.port)
            let body = Array(#"{"type":"phone.changed","user_id":"42","data":{"phone_number":"+15555550100","name":"Jörg 🎉"}}"#.utf8)
            let headers = try Self.signedHeaders(body: body, secrets: [old, new], id: "msg_rotation")
            let response = try await http.send(.POST, "/hooks?x=1", headers: headers, body: body)
            #expect(response.status == 200)
            #expect(response.json?["ok"] as? Bool == true)

            let delivery = try #require(try await subscriber.waitForDeliveries(count: 1, within: .seconds(5)).first)
            #expect(subscriber.url().hasPrefix("http://127.0.0.1:\(subscriber.port)/hooks"))
            #expect(delivery.path == "/hooks")
            #expect(delivery.query == "x=1")
            #expect(delivery.webhookID == "msg_rotation")
            #expect(delivery.webhookTimestamp == headers.first { $0.0 == "webhook-timestamp" }?.1)
            #expect(delivery.signatures.count == 2)
            #expect(delivery.signedBy == [old, new])
            #expect(delivery.signatureValid)
            #expect(delivery.timestampWithinTolerance)
            #expect(delivery.userAgent == "EchoRelay-Test/1")
            #expect(delivery.contentType == "application/json")
            #expect(delivery.headers["webhook-id"] == "msg_rotation")
            #expect(Array(delivery.body) == body)
            #expect(delivery.object?["user_id"] == .string("42"))
            #expect(delivery.object?["data"]?.objectValue?["name"] == .string("Jörg 🎉"))
            #expect(abs(delivery.receivedAt.timeIntervalSinceNow) < 10)

            // A rotation finished: only the new secret is known; the old one alone no longer verifies.
            subscriber.setSecrets([new])
            let oldOnly = try Self.signedHeaders(body: body, secrets: [old])
            _ = try await http.send(.POST, "/hooks", headers: oldOnly, body: body)
            let both = try Self.signedHeaders(body: body, secrets: [old, new])
            _ = try await http.send(.POST, "/hooks", headers: both, body: body)
            let later = try await subscriber.waitForDeliveries(count: 3, within: .seconds(5))
            #expect(later[1].signedBy.isEmpty && !later[1].signatureValid)
            #expect(later[2].signedBy == [new])
            #expect(later.map(\.index) == [0, 1, 2])
        }
    }

    @Test func rejectsTamperedWrongSecretStaleAndUnsignedRequests() async throws {
        let secret = WebhookSecret.generate()
        try await StandInSubscriber(secrets: [secret]).run { subscriber in
            let http = HTTPTestClient(port: subscriber.port)
            let body = Array(#"{"n":1}"#.utf8)
            let good = try Self.signedHeaders(body: body, secrets: [secret])
            // Body changed after signing.
            _ = try await http.send(.POST, "/a", headers: good, body: Array(#"{"n":2}"#.utf8))
            // Signed with a secret the subscriber does not know.
            _ = try await http.send(.POST, "/b", headers: try Self.signedHeaders(body: body, secrets: [WebhookSecret.generate()]), body: body)
            // Signed correctly, but with another id than the header carries.
            let otherID = good.map { $0.0 == "webhook-id" ? ($0.0, "msg_other") : $0 }
            _ = try await http.send(.POST, "/c", headers: otherID, body: body)
            // No signature headers at all; and a non-v1 entry only.
            _ = try await http.send(.POST, "/d", headers: [("Content-Type", "text/plain")], body: Array("not json".utf8))
            let v2 = good.map { $0.0 == "webhook-signature" ? ($0.0, "v2," + $0.1.dropFirst(3)) : $0 }
            _ = try await http.send(.POST, "/e", headers: v2, body: body)
            // Correctly signed, but ten minutes old: the signature holds, the timestamp does not.
            let stale = try Self.signedHeaders(body: body, secrets: [secret], timestamp: Date().addingTimeInterval(-600))
            _ = try await http.send(.POST, "/f", headers: stale, body: body)
            // And the control: correctly signed and fresh, at the root path.
            _ = try await http.send(.POST, "/", headers: good, body: body)

            let received = try await subscriber.waitForDeliveries(count: 7, within: .seconds(5))
            #expect(received.map(\.path) == ["/a", "/b", "/c", "/d", "/e", "/f", "/"])
            #expect(received.map(\.signatureValid) == [false, false, false, false, false, true, true])
            #expect(received[3].json == nil && received[3].bodyText == "not json" && received[3].signatures.isEmpty)
            #expect(received[4].signatures.isEmpty)
            #expect(received.map(\.timestampWithinTolerance) == [true, true, true, false, true, false, true])
        }
    }

    @Test func answersFromTheScriptInOrderThenTheDefault() async throws {
        let subscriber = StandInSubscriber()
        subscriber.script([
            .status(503, headers: [("Retry-After", "7")], body: #"{"error":"busy"}"#),
            .status(500),
            .status(410, headers: [("Content-Type", "text/plain")], body: "gone"),
        ])
        subscriber.script([.status(429)], forPath: "/special")
        try await subscriber.run { subscriber in
            let http = HTTPTestClient(port: subscriber.port)
            let first = try await http.send(.POST, "/hooks", body: [])
            #expect(first.status == 503)
            #expect(first.headers.first(name: "Retry-After") == "7")
            #expect(first.json?["error"] as? String == "busy")
            #expect(try await http.send(.POST, "/special", body: []).status == 429)
            #expect(try await http.send(.POST, "/special", body: []).status == 500)
            let gone = try await http.send(.POST, "/hooks", body: [])
            #expect(gone.status == 410 && gone.text == "gone")
            #expect(gone.headers.first(name: "Content-Type") == "text/plain")
            #expect(try await http.send(.POST, "/hooks", body: []).status == 200)
            subscriber.defaultAnswer = .status(204)
            #expect(try await http.send(.POST, "/hooks", body: []).status == 204)
            // Only POST is served.
            #expect(try await http.send(.GET, "/hooks").status != 200)

            let received = subscriber.deliveries
            #expect(received.map { $0.answer.statusCode } == [503, 429, 500, 410, 200, 204])
            subscriber.clearDeliveries()
            #expect(subscriber.deliveries.isEmpty)
        }
    }

    @Test func aHangDelaysTheAnswerAndEndsWhenTheSubscriberStops() async throws {
        let subscriber = StandInSubscriber()
        subscriber.script([.hang(.milliseconds(400)), .hang(.seconds(600))])
        let clock = ContinuousClock()
        let start = clock.now
        let stuck = try await subscriber.run { subscriber -> Task<Int?, Never> in
            let http = HTTPTestClient(port: subscriber.port)
            let slow = try await http.send(.POST, "/hooks", body: [])
            #expect(slow.status == 200)
            #expect(clock.now - start >= .milliseconds(400))

            // A client that gives up on a hang sees a timeout; the subscriber still recorded it.
            var request = HTTPClientRequest(url: subscriber.url())
            request.method = .POST
            await #expect(throws: (any Error).self) {
                _ = try await HTTPClient.shared.execute(request, timeout: .milliseconds(300))
            }
            subscriber.script([.hang(.seconds(600))])
            let stuck = Task { () -> Int? in
                var request = HTTPClientRequest(url: subscriber.url("/stuck"))
                request.method = .POST
                return try? await Int(HTTPClient.shared.execute(request, timeout: .seconds(60)).status.code)
            }
            try await subscriber.waitForDeliveries(count: 3, within: .seconds(5))
            return stuck
        }
        // Stopping released the 600 s hang: the run ended and the stuck request got an answer or an error.
        let status = await stuck.value
        #expect(clock.now - start < .seconds(30))
        #expect(status == nil || status == 503)
    }

    @Test func waitingForMoreDeliveriesThanArriveFailsWithAMessage() async throws {
        try await StandInSubscriber().run { subscriber in
            _ = try await HTTPTestClient(port: subscriber.port).send(.POST, "/hooks", headers: [("webhook-id", "msg_1")], body: [])
            let error = await #expect(throws: StandInError.self) {
                try await subscriber.waitForDeliveries(count: 2, within: .milliseconds(200))
            }
            #expect(error?.description.contains("1 of 2") == true)
            #expect(error?.description.contains("msg_1") == true)
        }
    }
}
