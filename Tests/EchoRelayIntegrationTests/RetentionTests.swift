import EchoRelayCore
import EchoRelayStandIns
import Foundation
import Testing
import TestSupport

/// Retention end to end: a real server prunes in the background, and `echorelay prune` does
/// the same by hand; what stays answers a repeated push.
@Suite struct RetentionTests {
    /// With a retention of a second, the worker's pruner cuts a delivered event to its
    /// receipt within a few rounds; the same push again still gets its stored answer.
    @Test func theBackgroundPrunerCutsAFinalEventToItsReceiptAndARepeatedPushIsAnswered() async throws {
        try await EchoFixture.run(retention: RetentionPolicy(attempts: .seconds(1), events: .seconds(1)),
                                  pruneInterval: .seconds(1)) { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url(), types: ["token.rotated"])
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let session = try f.session("ret-1")
                let body = eventBody(id: "evt_" + UUID().uuidString, type: "token.rotated", userID: "ret-1") {
                    $0["echo"] = try? f.echo(token: session.token, tokenSecret: session.secret)
                }
                let first = try await f.server.ingest(body)
                #expect(first.status == 202)
                let id = try #require(first.json?["id"] as? String)
                _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(20))

                var event: [String: Any] = [:]
                for _ in 0..<100 {
                    event = try await f.server.http.get("/v1/events/\(id)", bearer: LiveServer.adminToken).json ?? [:]
                    if !(event["pruned_at"] is NSNull), event["pruned_at"] != nil { break }
                    try await Task.sleep(for: .milliseconds(200))
                }
                #expect(event["pruned_at"] is String, "pruned within 20 s: \(event)")
                #expect((event["deliveries"] as? [Any])?.isEmpty == true)
                #expect(event["status"] as? String == "verified")

                let again = try await f.server.ingest(body)
                #expect(again.status == 202 && again.json?["sequence"] as? Int == first.json?["sequence"] as? Int,
                        "the receipt answers the repeated push: \(again.text)")
                let timeline = try await f.server.http.get("/v1/users/ret-1/events", bearer: LiveServer.adminToken).json
                #expect(((timeline?["events"] as? [[String: Any]])?.first?["pruned_at"]) is String)
                // The console says pruned, not that no subscription wanted the event.
                let console = ConsoleBrowser(port: f.server.http.port)
                try await console.signIn(token: try await SubscriptionsAPITests.token("support", "Sam", f.server))
                let eventPage = try await console.get("/console/events/\(id)").text
                #expect(eventPage.contains("Pruned") && !eventPage.contains("no subscription wanted"), "\(eventPage)")
                #expect(try await console.get("/console/users/ret-1").text.contains(#"<span class="hint">pruned</span>"#))
                let metrics = try await f.server.http.get("/metrics").text
                #expect(metrics.contains("echorelay_pruned_total{what=\"events\"} 1"), "\(metrics)")
            }
        }
    }

    /// `echorelay prune --dry-run` counts and changes nothing; `echorelay prune` removes.
    @Test func pruneByHandCountsThenRemoves() async throws {
        try await EchoFixture.run(retention: RetentionPolicy(attempts: nil, events: nil)) { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url(), types: ["token.rotated"])
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let event = try await f.pushVerified("token.rotated", userID: "ret-2", session: try f.session("ret-2"))
                let id = try #require(event["id"] as? String)
                _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(20))
                _ = try await f.finalDeliveries(of: id, count: 1)
                try await Task.sleep(for: .milliseconds(1100))  // final for more than the second kept below

                let environment = ["ECHORELAY_DATABASE_URL": f.server.database.url, "ECHORELAY_LOG_LEVEL": "error",
                                   "ECHORELAY_RETAIN_EVENTS": "1s"]
                let counted = try await ChildProcess.run(["prune", "--dry-run"], environment: environment)
                #expect(counted.status == 0, "\(counted.stderr)")
                #expect(counted.stdout.contains("dry run") && counted.stdout.range(of: #"receipt:\s+1\n"#, options: .regularExpression) != nil,
                        "\(counted.stdout)")
                let kept = try await f.server.http.get("/v1/events/\(id)", bearer: LiveServer.adminToken).json
                #expect(kept?["pruned_at"] is NSNull && (kept?["deliveries"] as? [Any])?.count == 1, "a dry run removes nothing")

                let pruned = try await ChildProcess.run(["prune"], environment: environment)
                #expect(pruned.status == 0 && !pruned.stdout.contains("dry run"), "\(pruned.stdout)\(pruned.stderr)")
                let receipt = try await f.server.http.get("/v1/events/\(id)", bearer: LiveServer.adminToken).json
                #expect(receipt?["pruned_at"] is String && (receipt?["deliveries"] as? [Any])?.isEmpty == true)

                let bad = try await ChildProcess.run(["prune", "--retain-events", "soon"], environment: environment)
                #expect(bad.status != 0 && bad.stderr.contains("ECHORELAY_RETAIN_EVENTS"), "\(bad.stderr)")
                let off = try await ChildProcess.run(["prune", "--retain-events", "0", "--retain-attempts", "0"], environment: environment)
                #expect(off.status == 0 && off.stdout.contains("keeps everything"), "\(off.stdout)")
                try await TestDatabase.withFresh { empty in
                    let unmigrated = try await ChildProcess.run(["prune", "--dry-run"], environment: [
                        "ECHORELAY_DATABASE_URL": empty.url, "ECHORELAY_LOG_LEVEL": "error",
                    ])
                    #expect(unmigrated.status == 1 && unmigrated.stderr.contains("echorelay migrate"), "\(unmigrated.stderr)")
                }
            }
        }
    }
}
