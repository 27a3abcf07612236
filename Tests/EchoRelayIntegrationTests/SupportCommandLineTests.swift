import EchoRelayCore
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// The support verbs of the `echorelay` binary (`events`, `replay`, `replays`,
/// `dead-letters`), run as child processes against a live server, the way support staff
/// run them.
@Suite struct SupportCommandLineTests {
    typealias Result = (status: Int32, stdout: String, stderr: String)

    /// Runs `echorelay` against `server` with `token` in ECHORELAY_TOKEN.
    static func cli(_ arguments: [String], _ server: LiveServer, token: String? = LiveServer.adminToken) async throws -> Result {
        var environment = ["ECHORELAY_URL": server.http.baseURL]
        if let token { environment["ECHORELAY_TOKEN"] = token }
        return try await ChildProcess.run(arguments, environment: environment)
    }

    /// Parses standard output as one JSON object; fails the test when it is not.
    static func object(_ result: Result) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return try #require(value as? [String: Any], "stdout is not a JSON object: \(result.stdout)")
    }

    /// The first column of every table row, header left out.
    static func firstColumn(_ table: String) -> [String] {
        table.split(separator: "\n").dropFirst().map { String($0.split(separator: " ").first ?? "") }
    }

    // MARK: events

    /// The deliveries column says how many of how many arrived, and `events show` gives
    /// every time to the millisecond, so the times of one page line up.
    @Test func eventsListSaysHowManyArrivedAndEventsShowGivesEveryTimeAlike() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                _ = try await f.subscribe(url: subscriber.url())
                let event = try await f.pushVerified("token.rotated", userID: "u-words", session: try f.session("u-words"))
                let eventID = try #require(event["id"] as? String)
                _ = try await f.finalDeliveries(of: eventID, count: 1)
                let list = try await Self.cli(["events", "list", "--user", "u-words"], f.server)
                #expect(list.stdout.contains("1 of 1 delivered"), "\(list.stdout)")
                let shown = try await Self.cli(["events", "show", eventID], f.server)
                let times = shown.stdout.matches(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/).map { String($0.0) }
                #expect(times.count >= 5, "\(shown.stdout)")
                let blockTimes = shown.stdout.split(separator: "\n").filter { $0.contains(" at:") }
                    .compactMap { $0.firstMatch(of: /\d{4}-\d{2}-\d{2}T[0-9:.]+Z/).map { String($0.0) } }
                #expect(!blockTimes.isEmpty && blockTimes.allSatisfy { $0.wholeMatch(of: /.*T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil },
                        "one precision: \(blockTimes)")
            }
        }
    }

    @Test func eventsListShowsTheUsersEventsNewestFirstAsATableAndAsJSON() async throws {
        try await LiveServer.run { server in
            #expect(try await server.ingest(eventBody(id: "evt_a1", type: "token.rotated", userID: "u-100")).status == 202)
            #expect(try await server.ingest(eventBody(id: "evt_a2", type: "phone.changed", userID: "u-100", phone: "+15555550100")).status == 202)
            #expect(try await server.ingest(eventBody(id: "evt_b1", userID: "u-200")).status == 202)
            let support = try await AccessTokenTests.create(role: "support", name: "support desk", in: server.database)

            let table = try await Self.cli(["events", "list", "--user", "u-100"], server, token: support.token)
            #expect(table.status == 0, "\(table.stderr)")
            let lines = table.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("SEQ  ID") == true, "\(table.stdout)")
            #expect(lines.count == 3)
            #expect(Self.firstColumn(table.stdout) == ["2", "1"])
            #expect(lines[1].contains("evt_a2") && lines[1].contains("phone.changed") && lines[1].contains("pending"))
            #expect(lines[2].contains("evt_a1") && lines[2].contains("token.rotated"))
            #expect(!table.stdout.contains("evt_b1"))
            // Columns line up: every row has its ID where the header has it.
            let idColumn = try #require(lines[0].range(of: "ID")).lowerBound.utf16Offset(in: lines[0])
            for line in lines.dropFirst() {
                #expect(line.dropFirst(idColumn).hasPrefix("evt_a"), "misaligned: \(line)")
            }

            let json = try await Self.cli(["events", "list", "--user", "u-100", "--json"], server, token: support.token)
            #expect(json.status == 0, "\(json.stderr)")
            let answer = try Self.object(json)
            let events = try #require(answer["events"] as? [[String: Any]])
            #expect(events.map { $0["id"] as? String } == ["evt_a2", "evt_a1"])
            #expect(answer.keys.contains("next_cursor"))
            #expect(json.stderr.isEmpty)

            let filtered = try await Self.cli(["events", "list", "--user", "u-100", "--type", "phone.changed", "--json"], server)
            #expect(try #require(Self.object(filtered)["events"] as? [[String: Any]]).map { $0["id"] as? String } == ["evt_a2"])

            // One page at a time, and every page with --all.
            let firstPage = try await Self.cli(["events", "list", "--user", "u-100", "--limit", "1"], server)
            #expect(Self.firstColumn(firstPage.stdout) == ["2"])
            #expect(firstPage.stderr.contains("--all"))
            let all = try await Self.cli(["events", "list", "--user", "u-100", "--limit", "1", "--all", "--json"], server)
            #expect(all.status == 0, "\(all.stderr)")
            let merged = try Self.object(all)
            #expect(try #require(merged["events"] as? [[String: Any]]).map { $0["id"] as? String } == ["evt_a2", "evt_a1"])
            #expect(merged["next_cursor"] is NSNull)

            let nobody = try await Self.cli(["events", "list", "--user", "nobody"], server)
            #expect(nobody.status == 0)
            #expect(nobody.stdout.contains("no events"))

            // Without --user: every user's events, newest received first, paged the same way.
            let everyone = try await Self.cli(["events", "list"], server, token: support.token)
            #expect(everyone.status == 0, "\(everyone.stderr)")
            let rows = everyone.stdout.split(separator: "\n").map(String.init)
            #expect(rows.first?.hasPrefix("RECEIVED") == true && rows.first?.contains("USER") == true, "\(everyone.stdout)")
            #expect(rows.dropFirst().map { $0.contains("evt_b1") ? "b1" : $0.contains("evt_a2") ? "a2" : "a1" } == ["b1", "a2", "a1"])
            #expect(rows[1].contains("u-200"))
            let everyPage = try await Self.cli(["events", "list", "--limit", "2", "--all", "--json"], server)
            #expect(try #require(Self.object(everyPage)["events"] as? [[String: Any]]).map { $0["id"] as? String } == ["evt_b1", "evt_a2", "evt_a1"])
            let phones = try await Self.cli(["events", "list", "--type", "phone.changed", "--status", "pending", "--json"], server)
            #expect(try #require(Self.object(phones)["events"] as? [[String: Any]]).map { $0["user_id"] as? String } == ["u-100"])
            let none = try await Self.cli(["events", "list", "--reason", "unknown_token"], server)
            #expect(none.status == 0 && none.stdout.contains("no events match"), "\(none.stdout)")
            let both = try await Self.cli(["events", "list", "--user", "u-100", "--reason", "unknown_token"], server)
            #expect(both.status == 64, "a usage error, caught before any request")
            #expect(both.stderr.contains("--reason and --subscription filter every user's events"), "\(both.stderr)")
        }
    }

    @Test func eventsShowOfAnUnknownIDFailsWithTheServersDetail() async throws {
        try await LiveServer.run { server in
            let result = try await Self.cli(["events", "show", "evt_missing"], server)
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("error: no event with id \"evt_missing\""), "\(result.stderr)")
            #expect(result.stderr.contains("\nhint: check the id"), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            let json = try await Self.cli(["events", "show", "evt_missing", "--json"], server)
            #expect(json.status == 1)
            #expect(json.stdout.isEmpty, "nothing on stdout, so a script does not parse an error as an answer")
        }
    }

    // MARK: refusals and usage errors

    @Test func aRefusedTokenGetsTheTokenHintAndIsNeverPrinted() async throws {
        try await LiveServer.run { server in
            let wrong = "wrong-token-4711-must-not-be-printed"
            let result = try await Self.cli(["events", "list", "--user", "u-1"], server, token: wrong)
            #expect(result.status == 1)
            #expect(result.stderr.contains("error: "))
            #expect(result.stderr.contains("hint: the token was refused: check ECHORELAY_TOKEN / --token"), "\(result.stderr)")
            #expect(!(result.stdout + result.stderr).contains(wrong))

            // An app token is known but may not read events: the server's role detail.
            let app = try await AccessTokenTests.create(role: "app", name: "backend", in: server.database)
            let forbidden = try await Self.cli(["events", "show", "evt_x"], server, token: app.token)
            #expect(forbidden.status == 1)
            #expect(forbidden.stderr.contains("the token has the app role"), "\(forbidden.stderr)")
            #expect(!(forbidden.stdout + forbidden.stderr).contains(app.token))
        }
    }

    @Test func aRefusedServerURLIsQuotedOnlyWhenItCanHoldNoCredential() async throws {
        for url in ["https://h.example/?access_token=er_leak4711", "https://user:er_leak4711@h.example", "ftp://h.example"] {
            let result = try await ChildProcess.run(["events", "list", "--user", "u-1"],
                                                    environment: ["ECHORELAY_URL": url, "ECHORELAY_TOKEN": "x"])
            #expect(result.status == 1 && result.stderr.contains("ECHORELAY_URL / --url must be"), "\(url): \(result.stderr)")
            #expect(!result.stderr.contains("er_leak4711"), "\(url)")
            #expect(result.stderr.contains(url) == url.hasPrefix("ftp"), "only a URL without credentials is quoted: \(url)")
        }
    }

    @Test func withoutATokenOrAReasonNothingIsSent() async throws {
        // A port nobody listens on: had a request been tried, the error would say so.
        let unreachable = "http://127.0.0.1:\(try freeLoopbackPort())"
        let noToken = try await ChildProcess.run(["events", "list", "--user", "u-1"], environment: ["ECHORELAY_URL": unreachable])
        #expect(noToken.status == 1)
        #expect(noToken.stderr.contains("ECHORELAY_TOKEN"), "\(noToken.stderr)")
        #expect(!noToken.stderr.contains("cannot reach"))

        let environment = ["ECHORELAY_URL": unreachable, "ECHORELAY_TOKEN": "t"]
        for arguments in [["replay", "evt_1"], ["replay", "--user", "u-1"], ["replays", "cancel", "rpl_1"],
                          ["dead-letters", "redrive"], ["replay", "evt_1", "--reason", "  "]] {
            let result = try await ChildProcess.run(arguments, environment: environment)
            #expect(result.status == 64, "\(arguments): usage error")
            #expect(result.stderr.contains("--reason is required"), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("cannot reach"))
        }

        let both = try await ChildProcess.run(["replay", "evt_1", "--user", "u-1", "--reason", "r"], environment: environment)
        #expect(both.status == 64)
        #expect(both.stderr.contains("either an event id or bulk filters"), "\(both.stderr)")
        let neither = try await ChildProcess.run(["replay", "--reason", "r"], environment: environment)
        #expect(neither.status == 64)
        #expect(neither.stderr.contains("give an event id, or filters"), "\(neither.stderr)")
        let badTime = try await ChildProcess.run(["events", "list", "--user", "u", "--since", "yesterday"], environment: environment)
        #expect(badTime.status == 64)
        #expect(badTime.stderr.contains("--since"))

        let refused = try await ChildProcess.run(["events", "show", "evt_1"], environment: environment)
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("error: cannot reach \(unreachable): connection refused"), "\(refused.stderr)")
    }

    @Test func everySupportVerbDocumentsItsFlagsAndExitStatus() async throws {
        for (verb, flags) in [(["events", "list"], ["--user", "--type", "--status", "--since", "--until", "--limit", "--all"]),
                              (["events", "show"], ["<id>"]),
                              (["replay"], ["--reason", "--subscription", "--user", "--dry-run"]),
                              (["replays", "show"], ["--wait", "--interval", "3"]),
                              (["replays", "cancel"], ["--reason"]),
                              (["dead-letters", "list"], ["--subscription", "--all"]),
                              (["dead-letters", "redrive"], ["--reason", "--dry-run"])] {
            let help = try await ChildProcess.run(verb + ["--help"])
            #expect(help.status == 0)
            for name in flags + ["--url", "--token", "--json", "ECHORELAY_URL", "ECHORELAY_TOKEN", "Exit status"] {
                #expect(help.stdout.contains(name), "\(verb) --help does not mention \(name)")
            }
        }
    }

    // MARK: replays

    @Test func replayingAnEventResendsItWithTheSameWebhookIDAndWaitEndsCompleted() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                let subscriptionID = try #require(subscription["id"] as? String)
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let event = try await f.pushVerified("token.rotated", userID: "u-300", session: try f.session("u-300"))
                let eventID = try #require(event["id"] as? String)
                let original = try #require(try await subscriber.waitForDeliveries(count: 1, within: .seconds(20)).first)

                let replay = try await Self.cli(["replay", eventID, "--reason", "backend restored from backup", "--json"], f.server)
                #expect(replay.status == 0, "\(replay.stderr)")
                let receipt = try Self.object(replay)
                let replayID = try #require(receipt["id"] as? String)
                #expect(replayID.hasPrefix("rpl_"))
                #expect(receipt["matched"] as? Int == 1)
                #expect(receipt["subscription_ids"] as? [String] == [subscriptionID])

                let received = try await subscriber.waitForDeliveries(count: 2, within: .seconds(20))
                #expect(received[1].webhookID == original.webhookID, "a replay keeps the original webhook-id")
                #expect(received[1].signatureValid)

                let wait = try await Self.cli(["replays", "show", replayID, "--wait", "--interval", "200ms"], f.server)
                #expect(wait.status == 0, "\(wait.stderr)")
                #expect(wait.stdout.contains("replay:"))
                let state = wait.stdout.split(separator: "\n").first { $0.hasPrefix("state:") }
                #expect(state?.hasSuffix("completed") == true, "\(wait.stdout)")
                #expect(wait.stdout.split(separator: "\n").contains { $0.hasPrefix("delivered:") && $0.hasSuffix(" 1") })
                // Standard error is a pipe here: plain progress lines, the last one final.
                #expect(wait.stderr.split(separator: "\n").last?.contains("completed 1/1 delivered 1 failed 0") == true, "\(wait.stderr)")

                let json = try await Self.cli(["replays", "show", replayID, "--json"], f.server)
                #expect(try Self.object(json)["state"] as? String == "completed")

                // The event now shows both deliveries, the replay's marked with its id.
                let show = try await Self.cli(["events", "show", eventID], f.server)
                #expect(show.status == 0, "\(show.stderr)")
                #expect(show.stdout.contains("delivery 2 of 2"), "\(show.stdout)")
                #expect(show.stdout.contains(replayID))
                #expect(show.stdout.contains(try #require(original.webhookID)))
                #expect(show.stdout.contains("attempts:"))
            }
        }
    }

    @Test func aBulkDryRunPrintsTheMatchedCountAndSendsNothing() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                _ = try await f.subscribe(url: subscriber.url())
                let session = try f.session("u-400")
                try await f.pushVerified("token.rotated", userID: "u-400", session: session)
                try await f.pushVerified("token.rotated", userID: "u-400", session: session)
                try await f.pushVerified("token.rotated", userID: "u-401", session: try f.session("u-401"))
                try await subscriber.waitForDeliveries(count: 3, within: .seconds(20))

                let dryRun = try await Self.cli(["replay", "--user", "u-400", "--dry-run", "--reason", "checking"], f.server)
                #expect(dryRun.status == 0, "\(dryRun.stderr)")
                #expect(dryRun.stdout.contains("dry run: 2 deliveries match"), "\(dryRun.stdout)")
                let json = try await Self.cli(["replay", "--user", "u-400", "--dry-run", "--reason", "checking", "--json"], f.server)
                let answer = try Self.object(json)
                #expect(answer["matched"] as? Int == 2)
                #expect(answer["dry_run"] as? Bool == true)
                try await Task.sleep(for: .milliseconds(500))
                #expect(subscriber.deliveries.count == 3, "a dry run sends nothing")

                // For real this time, followed to the end.
                let bulk = try await Self.cli(["replay", "--user", "u-400", "--reason", "backend lost a day"], f.server)
                #expect(bulk.status == 0, "\(bulk.stderr)")
                #expect(bulk.stdout.split(separator: "\n").contains { $0.hasPrefix("kind:") && $0.hasSuffix("bulk") }, "\(bulk.stdout)")
                let idLine = try #require(bulk.stdout.split(separator: "\n").first { $0.hasPrefix("replay:") })
                let replayID = try #require(idLine.split(separator: " ").last.map(String.init))
                #expect(replayID.hasPrefix("rpl_"))
                let wait = try await Self.cli(["replays", "show", replayID, "--wait", "--interval", "200ms"], f.server)
                #expect(wait.status == 0, "\(wait.stderr)")
                #expect(wait.stdout.split(separator: "\n").contains { $0.hasPrefix("state:") && $0.hasSuffix("completed") })
                #expect(wait.stdout.split(separator: "\n").contains { $0.hasPrefix("delivered:") && $0.hasSuffix(" 2") })
                let resent = try await subscriber.waitForDeliveries(count: 5, within: .seconds(20))
                #expect(resent.dropFirst(3).allSatisfy { $0.object?["user_id"]?.stringValue == "u-400" })

                // A finished replay cannot be cancelled: the server's detail, exit 1.
                let cancel = try await Self.cli(["replays", "cancel", replayID, "--reason", "too late"], f.server)
                #expect(cancel.status == 1)
                #expect(cancel.stderr.hasPrefix("error: replay \"\(replayID)\" is already completed"), "\(cancel.stderr)")
            }
        }
    }

    /// After the only subscription was deleted, a replay would send nothing: the server says
    /// why with a 422 and the command exits 1, for one event and for a bulk replay.
    @Test func aReplayThatWouldSendNothingFailsWithTheReason() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                let event = try await f.pushVerified("token.rotated", userID: "u-410", session: try f.session("u-410"))
                let eventID = try #require(event["id"] as? String)
                try await subscriber.waitForDeliveries(count: 1, within: .seconds(20))
                let id = try #require(subscription["id"] as? String)
                let deleted = try await f.server.http.send(.DELETE, "/v1/subscriptions/\(id)", headers: [("Authorization", "Bearer \(LiveServer.adminToken)")])
                #expect(deleted.status == 204)

                let one = try await Self.cli(["replay", eventID, "--reason", "backend restored"], f.server)
                #expect(one.status == 1)
                #expect(one.stderr.hasPrefix("error: no enabled subscription wants token.rotated events"), "\(one.stderr)")
                // In the command line's words, with what to do.
                #expect(one.stderr.contains("name one in --subscription") && !one.stderr.contains("subscription_ids"), "\(one.stderr)")
                #expect(one.stderr.contains("hint: list the subscriptions with: echorelay subscriptions list"), "\(one.stderr)")
                let bulk = try await Self.cli(["replay", "--user", "u-410", "--reason", "backend restored"], f.server)
                #expect(bulk.status == 1)
                #expect(bulk.stderr.hasPrefix("error: no original delivery"), "\(bulk.stderr)")
                #expect(bulk.stderr.contains("\nhint: "), "every refusal says what to do: \(bulk.stderr)")
                let answer = try await f.server.http.send(
                    .POST, "/v1/events/\(eventID)/replay",
                    headers: [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")],
                    body: Array(#"{"reason": "backend restored"}"#.utf8)
                )
                #expect(answer.status == 422)
                #expect(answer.json?["type"] as? String == "urn:echorelay:problem:nothing-to-replay")
            }
        }
    }

    @Test func waitingOnAReplayWhoseDeliveriesFailExitsThreeAndTheyBecomeDeadLetters() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                let subscriptionID = try #require(subscription["id"] as? String)
                let event = try await f.pushVerified("token.rotated", userID: "u-500", session: try f.session("u-500"))
                let eventID = try #require(event["id"] as? String)
                try await subscriber.waitForDeliveries(count: 1, within: .seconds(20))

                subscriber.defaultAnswer = .status(500, body: "down for maintenance")
                let replay = try await Self.cli(["replay", eventID, "--reason", "resend", "--json"], f.server)
                let replayID = try #require(Self.object(replay)["id"] as? String)
                let wait = try await Self.cli(["replays", "show", replayID, "--wait", "--interval", "200ms"], f.server)
                #expect(wait.status == 3, "\(wait.stdout) \(wait.stderr)")
                #expect(wait.stdout.split(separator: "\n").contains { $0.hasPrefix("failed:") && $0.hasSuffix(" 1") })
                #expect(wait.stderr.contains("1 delivery failed"), "\(wait.stderr)")

                let list = try await Self.cli(["dead-letters", "list"], f.server)
                #expect(list.status == 0, "\(list.stderr)")
                let lines = list.stdout.split(separator: "\n").map(String.init)
                #expect(lines.first?.hasPrefix("DEAD AT") == true, "\(list.stdout)")
                #expect(lines.count == 2)
                #expect(lines.last?.contains(eventID) == true)
                #expect(lines.last?.contains(subscriptionID) == true)
                #expect(lines.last?.contains("500") == true, "the last error: \(list.stdout)")

                let json = try await Self.cli(["dead-letters", "list", "--subscription", subscriptionID, "--json"], f.server)
                let letters = try #require(Self.object(json)["dead_letters"] as? [[String: Any]])
                #expect(letters.map { $0["event_id"] as? String } == [eventID])
                #expect(letters.first?["replay_id"] as? String == replayID)

                let redrive = try await Self.cli(["dead-letters", "redrive", "--reason", "fixed", "--dry-run"], f.server)
                #expect(redrive.status == 0, "\(redrive.stderr)")
                #expect(redrive.stdout.contains("dry run: 1 dead letter matches"), "\(redrive.stdout)")
            }
        }
    }
}
