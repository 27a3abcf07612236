import EchoRelayCore
import EchoRelayServer
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// `POST /v1/subscriptions/{id}/recover` end to end: a real server, a real subscriber, and an
/// app token recovering what its subscription missed while it was disabled.
@Suite struct RecoverAPITests {
    @Test func anAppRecoversWhatItsSubscriptionMissedWhileDisabledInOrderOnceAndFollowsIt() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let billing = try await SubscriptionsAPITests.token("app", "billing", f.server)
                let messaging = try await SubscriptionsAPITests.token("app", "messaging", f.server)
                let subscription = try await f.subscribe(url: subscriber.url(), types: ["token.rotated"], token: billing)
                let id = try #require(subscription["id"] as? String)
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                func post(_ path: String, _ token: String, _ body: [String: Any]? = nil) async throws -> TestHTTPResponse {
                    try await f.server.http.send(
                        .POST, path, headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                        body: try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) } ?? []
                    )
                }
                let since = RFC3339.format(Date().addingTimeInterval(-60))

                #expect(try await post("/v1/subscriptions/\(id)/disable", billing).status == 200)
                for (user, count) in [("rc1", 3), ("rc2", 1)] {
                    let session = try f.session(user)
                    for _ in 0..<count {
                        #expect(try await f.pushVerified("token.rotated", userID: user, session: session)["status"] as? String == "verified")
                    }
                }
                let dryRun = try await post("/v1/subscriptions/\(id)/recover", billing, ["since": since, "dry_run": true])
                #expect(dryRun.status == 200 && dryRun.json?["matched"] as? Int == 4, "\(dryRun.text)")
                #expect(try await post("/v1/subscriptions/\(id)/recover", messaging, ["since": since]).status == 404,
                        "another app's subscription looks unknown")
                let missingSince = try await post("/v1/subscriptions/\(id)/recover", billing, ["until": since])
                #expect(missingSince.status == 422)
                #expect((missingSince.json?["errors"] as? [[String: Any]])?.compactMap { $0["field"] as? String } == ["since"])

                // Started while the subscription is still disabled: its deliveries wait for it.
                let started = try await post("/v1/subscriptions/\(id)/recover", billing, ["since": since])
                #expect(started.status == 202, "\(started.text)")
                let recover = try #require(started.json)
                let replayID = try #require(recover["id"] as? String)
                #expect(recover["kind"] as? String == "recover" && recover["matched"] as? Int == 4)
                try await Task.sleep(for: .seconds(1))
                #expect(subscriber.deliveries.isEmpty, "nothing reaches a disabled subscription")
                #expect(try await post("/v1/subscriptions/\(id)/enable", billing).status == 200)

                let received = try await subscriber.waitForDeliveries(count: 4, within: .seconds(30))
                var sequences: [String: [Int64]] = [:]
                for delivery in received {
                    let body = try #require(delivery.object)
                    guard case .integer(let sequence)? = body["sequence"], let user = body["user_id"]?.stringValue else {
                        Issue.record("a delivery without user_id and sequence")
                        continue
                    }
                    sequences[user, default: []].append(sequence)
                    #expect(body["replay"]?.objectValue?["id"]?.stringValue == replayID, "marked as the recover's")
                }
                #expect(sequences == ["rc1": [1, 2, 3], "rc2": [1]], "each user's events in order")
                #expect(Set(received.map(\.webhookID)).count == 4)

                // The app follows its recover; another app cannot see it.
                var progress: [String: Any] = [:]
                for _ in 0..<50 {
                    progress = try await f.server.http.get("/v1/replays/\(replayID)", bearer: billing).json ?? [:]
                    if progress["state"] as? String != "running" { break }
                    try await Task.sleep(for: .milliseconds(200))
                }
                #expect(progress["state"] as? String == "completed" && progress["delivered"] as? Int == 4)
                #expect(try await f.server.http.get("/v1/replays/\(replayID)", bearer: messaging).status == 404)

                let again = try await post("/v1/subscriptions/\(id)/recover", billing, ["since": since])
                #expect(again.status == 422 && (again.json?["type"] as? String)?.hasSuffix("nothing-to-recover") == true,
                        "exactly once: \(again.text)")
                try await Task.sleep(for: .milliseconds(300))
                #expect(subscriber.deliveries.count == 4)
            }
        }
    }
}
