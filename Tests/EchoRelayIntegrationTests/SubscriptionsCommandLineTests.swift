import EchoRelayCore
import EchoRelayStandIns
import Foundation
import Testing
import TestSupport

/// `echorelay subscriptions …`, run as a real child process against a live server, with an app
/// token as a backend team would use it.
@Suite struct SubscriptionsCommandLineTests {
    typealias CLI = SupportCommandLineTests

    @Test func anAppTeamCreatesTestsReadsAndManagesItsSubscriptionFromTheCommandLine() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let app = try await SubscriptionsAPITests.token("app", "billing", f.server)
                func run(_ arguments: [String]) async throws -> CLI.Result {
                    try await CLI.cli(["subscriptions"] + arguments, f.server, token: app)
                }

                let created = try await run(["create", subscriber.url(), "--type", "token.rotated", "--no-ordered",
                                             "--description", "billing", "--json"])
                #expect(created.status == 0, "\(created.stderr)")
                let json = try CLI.object(created)
                let id = try #require(json["id"] as? String)
                let secret = try #require(json["secret"] as? String)
                subscriber.setSecrets([secret])
                #expect(json["ordered"] as? Bool == false)

                let listed = try await run(["list"])
                #expect(listed.status == 0 && CLI.firstColumn(listed.stdout) == [id], "\(listed.stdout)\(listed.stderr)")
                let shown = try await run(["show", id])
                #expect(shown.stdout.contains("billing") && shown.stdout.contains("enabled") && !shown.stdout.contains(secret))

                let tested = try await run(["test", id])
                #expect(tested.status == 0 && tested.stdout.contains("delivered") && tested.stdout.contains("200"), "\(tested.stdout)")
                #expect(try await subscriber.waitForDeliveries(count: 1, within: .seconds(5)).first?.object?["type"]?.stringValue
                        == "echorelay.test")
                subscriber.script([.status(500, body: "down")])
                let failed = try await run(["test", id])
                #expect(failed.status == 3 && failed.stdout.contains("500"), "a failed test exits 3: \(failed.stdout)")

                let event = try await f.pushVerified("token.rotated", userID: "cli-1", session: try f.session("cli-1"))
                _ = try await subscriber.waitForDeliveries(count: 3, within: .seconds(20))
                try await Task.sleep(for: .milliseconds(300))
                let deliveries = try await run(["deliveries", id, "--user", "cli-1"])
                let eventID = try #require(event["id"] as? String)
                #expect(deliveries.status == 0 && deliveries.stdout.contains(eventID), "\(deliveries.stdout)")
                let page = try CLI.object(try await run(["deliveries", id, "--json"]))
                let deliveryID = try #require((page["deliveries"] as? [[String: Any]])?.first?["id"] as? Int)
                let tries = try await run(["deliveries", id, "--attempts", String(deliveryID)])
                #expect(tries.status == 0 && tries.stdout.contains("STATUS"), "\(tries.stdout)")

                #expect(try await run(["disable", id]).stdout.contains("disabled by billing"))
                #expect(try await run(["enable", id]).stdout.contains("enabled"))
                let rotated = try await run(["rotate-secret", id])
                #expect(rotated.status == 0 && rotated.stdout.contains("whsec_") && !rotated.stdout.contains(secret))

                let bad = try await run(["deliveries", id, "--status", "sent"])
                #expect(bad.status != 0 && bad.stderr.contains("--status"), "\(bad.stderr)")
                let other = try await SubscriptionsAPITests.token("app", "messaging", f.server)
                let hidden = try await CLI.cli(["subscriptions", "show", id], f.server, token: other)
                #expect(hidden.status == 1 && hidden.stderr.contains("404") || hidden.stderr.contains("no subscription"), "\(hidden.stderr)")
            }
        }
    }

    /// `subscriptions recover`: counts what a disabled subscription missed, then sends it and
    /// follows the recover to its end.
    @Test func anAppTeamRecoversWhatItMissedFromTheCommandLine() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let app = try await SubscriptionsAPITests.token("app", "billing", f.server)
                func run(_ arguments: [String]) async throws -> CLI.Result {
                    try await CLI.cli(["subscriptions"] + arguments, f.server, token: app)
                }
                let id = try #require(try CLI.object(try await run(["create", subscriber.url(), "--type", "token.rotated", "--json"]))["id"]
                    as? String)
                #expect(try await run(["disable", id]).status == 0)
                for _ in 0..<2 { try await f.pushVerified("token.rotated", userID: "cli-r", session: try f.session("cli-r")) }

                #expect(try await run(["enable", id]).status == 0)
                let counted = try await run(["recover", id, "--since", "10m", "--dry-run"])
                #expect(counted.status == 0 && counted.stdout.contains("2 events"), "\(counted.stdout)\(counted.stderr)")
                let followed = try await run(["recover", id, "--since", "10m", "--reason", "endpoint was down", "--wait"])
                #expect(followed.status == 0 && followed.stdout.contains("completed"), "\(followed.stdout)\(followed.stderr)")
                #expect(try await subscriber.waitForDeliveries(count: 2, within: .seconds(10)).count == 2)
                let usage = try await run(["recover", id])
                #expect(usage.status == 64 && usage.stderr.contains("--since"), "\(usage.stderr)")
            }
        }
    }
}
