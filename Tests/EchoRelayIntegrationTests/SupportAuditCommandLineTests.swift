import EchoRelayCore
import EchoRelayStandIns
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `echorelay audit` and `echorelay events reverify`, run as child processes against a live
/// server, the way an administrator and support staff run them.
@Suite struct SupportAuditCommandLineTests {
    typealias Result = SupportCommandLineTests.Result

    static func cli(_ arguments: [String], _ server: LiveServer, token: String? = LiveServer.adminToken) async throws -> Result {
        try await SupportCommandLineTests.cli(arguments, server, token: token)
    }

    /// Runs `echorelay` against `server` with `input` on its standard input, as the right
    /// side of a shell pipe gets it.
    static func cli(_ arguments: [String], _ server: LiveServer, token: String = LiveServer.adminToken, input: Data) async throws -> Result {
        try await ChildProcess.run(arguments, environment: ["ECHORELAY_URL": server.http.baseURL, "ECHORELAY_TOKEN": token],
                                   input: input)
    }

    /// A file in a fresh temporary directory, holding `text`.
    static func file(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("echo-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        return url
    }

    // MARK: audit

    @Test func auditListsAReplayWithItsActorAndReasonAndFiltersByAction() async throws {
        try await EchoFixture.run { f in
            let support = try await AccessTokenTests.create(role: "support", name: "Sam from support", in: f.server.database)
            // A replay needs a subscription to send to (one that would send nothing is refused).
            _ = try await f.subscribe(url: "http://127.0.0.1:9/hooks/audit")
            let eventID = try #require(try await f.pushVerified("token.rotated", userID: "u-700", session: try f.session("u-700"))["id"] as? String)
            let replay = try await Self.cli(["replay", eventID, "--reason", "ticket 4411: backend restored"], f.server, token: support.token)
            #expect(replay.status == 0, "\(replay.stderr)")
            let longReason = "ticket 4412: " + String(repeating: "the billing backend lost a day of updates, ", count: 4) + "END"
            let again = try await Self.cli(["replay", eventID, "--reason", longReason], f.server, token: support.token)
            #expect(again.status == 0, "\(again.stderr)")

            let table = try await Self.cli(["audit"], f.server)
            #expect(table.status == 0, "\(table.stderr)")
            let lines = table.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("TIME") == true, "\(table.stdout)")
            for column in ["ACTOR", "ACTION", "TARGET", "MATCHED", "REASON"] {
                #expect(lines.first?.contains(column) == true, "no \(column) column: \(table.stdout)")
            }
            // Newest first: the two replays, the subscription's creation, the support token's.
            #expect(lines.count == 5, "\(table.stdout)")
            let first = try #require(lines.dropFirst().first)
            let second = try #require(lines.dropFirst(2).first)
            #expect(second.contains("Sam from support (support)") && second.contains("event.replay") && second.contains(eventID))
            #expect(second.hasSuffix("ticket 4411: backend restored"), "\(second)")
            #expect(first.contains("event.replay"))
            #expect(first.contains("ticket 4412: the billing") && first.hasSuffix("…"), "a long reason is shortened in the table: \(first)")
            #expect(!first.contains("END"))
            #expect(lines[3].contains("subscription.create"), "\(lines[3])")
            #expect(lines[4].contains("token.create") && lines[4].contains(support.id), "\(lines[4])")
            // Columns line up: every row has its action where the header has ACTION.
            let actionColumn = try #require(lines[0].range(of: "ACTION")).lowerBound.utf16Offset(in: lines[0])
            for (line, action) in zip(lines.dropFirst(), ["event.replay", "event.replay", "subscription.create", "token.create"]) {
                #expect(line.dropFirst(actionColumn).hasPrefix(action), "misaligned: \(line)")
            }

            let json = try await Self.cli(["audit", "--json"], f.server)
            #expect(json.status == 0, "\(json.stderr)")
            #expect(json.stderr.isEmpty)
            let entries = try #require(try SupportCommandLineTests.object(json)["entries"] as? [[String: Any]])
            #expect(entries.map { $0["action"] as? String } == ["event.replay", "event.replay", "subscription.create", "token.create"])
            #expect(entries[0]["reason"] as? String == longReason, "--json keeps the whole reason")
            #expect(entries[1]["reason"] as? String == "ticket 4411: backend restored")
            #expect(entries[1]["target"] as? String == eventID)
            let actor = try #require(entries[1]["actor"] as? [String: Any])
            #expect(actor["name"] as? String == "Sam from support")
            #expect(actor["role"] as? String == "support")
            #expect(actor["token_id"] as? String == support.id)

            let filtered = try await Self.cli(["audit", "--action", "token.create"], f.server)
            #expect(filtered.status == 0, "\(filtered.stderr)")
            #expect(filtered.stdout.split(separator: "\n").count == 2, "\(filtered.stdout)")
            #expect(filtered.stdout.contains("token.create") && !filtered.stdout.contains("event.replay"))
            let byActor = try await Self.cli(["audit", "--actor", "Sam from support", "--action", "event.replay", "--json"], f.server)
            #expect(try #require(try SupportCommandLineTests.object(byActor)["entries"] as? [Any]).count == 2)
            let none = try await Self.cli(["audit", "--action", "replay.cancel"], f.server)
            #expect(none.status == 0)
            #expect(none.stdout.contains("no audit entries match"), "\(none.stdout)")

            // One page at a time, and every page with --all.
            let page = try await Self.cli(["audit", "--limit", "1"], f.server)
            #expect(page.stdout.split(separator: "\n").count == 2)
            #expect(page.stderr.contains("--all"), "\(page.stderr)")
            let all = try await Self.cli(["audit", "--limit", "1", "--all", "--json"], f.server)
            let merged = try SupportCommandLineTests.object(all)
            #expect((merged["entries"] as? [Any])?.count == 4)
            #expect(merged["next_cursor"] is NSNull)

            // The audit log is for administrators: a support token gets the server's detail.
            let refused = try await Self.cli(["audit"], f.server, token: support.token)
            #expect(refused.status == 1)
            #expect(refused.stdout.isEmpty)
            #expect(refused.stderr.hasPrefix("error: this needs the admin role; the token has the support role"), "\(refused.stderr)")
            #expect(refused.stderr.contains("hint: the audit log needs a token with the admin role"), "\(refused.stderr)")
            #expect(!refused.stderr.contains(support.token))
        }
    }

    // MARK: events reverify

    @Test func reverifyingAnUnverifiableEventWithEchoSignOnStandardInputVerifiesIt() async throws {
        try await EchoFixture.run(retrySchedule: [.milliseconds(100)]) { f in
            let session = try f.session("u-800")
            f.provider.failNext(2)  // the first try and its one retry: unverifiable
            let eventID = try await f.push("token.rotated", userID: "u-800",
                                           echo: try f.echo(token: session.token, tokenSecret: session.secret))
            #expect(try await f.outcome(of: eventID)["status"] as? String == "unverifiable")

            // Fresh headers, the way an operator makes them.
            let signed = try await ChildProcess.run(["echo-sign", "--url", f.provider.digitsURL, "--json"], environment: [
                "ECHORELAY_ECHO_CONSUMER_KEY": EchoFixture.consumerKey, "ECHORELAY_ECHO_CONSUMER_SECRET": EchoFixture.consumerSecret,
                "ECHORELAY_ECHO_TOKEN": session.token, "ECHORELAY_ECHO_TOKEN_SECRET": session.secret,
            ])
            #expect(signed.status == 0, "\(signed.stderr)")
            let echo = try #require(try JSONSerialization.jsonObject(with: Data(signed.stdout.utf8)) as? [String: String])
            let authorization = try #require(echo["authorization"])
            let signature = try #require(try OAuthAuthorizationHeader.parse(authorization).signature)

            let reverify = try await Self.cli(["events", "reverify", eventID, "--reason", "provider back", "--echo", "-"],
                                              f.server, input: Data(signed.stdout.utf8))
            #expect(reverify.status == 0, "\(reverify.stderr)")
            #expect(reverify.stdout.contains("event \(eventID) is pending verification again"), "\(reverify.stdout)")
            #expect(reverify.stdout.contains("echorelay events show \(eventID)"))
            for secret in [authorization, signature, session.token, session.secret] {
                #expect(!(reverify.stdout + reverify.stderr).contains(secret), "the echo credentials are never printed")
            }
            #expect(try await f.outcome(of: eventID)["status"] as? String == "verified")
            let show = try await Self.cli(["events", "show", eventID], f.server)
            #expect(show.stdout.split(separator: "\n").contains { $0.hasPrefix("status:") && $0.hasSuffix("verified") }, "\(show.stdout)")

            // Only an unverifiable event can be re-verified: the server's detail, exit 1.
            let file = try Self.file(signed.stdout)
            defer { try? FileManager.default.removeItem(at: file) }
            let again = try await Self.cli(["events", "reverify", eventID, "--reason", "again", "--echo", file.path], f.server)
            #expect(again.status == 1)
            #expect(again.stdout.isEmpty)
            #expect(again.stderr.hasPrefix("error: event \"\(eventID)\" is verified; only an unverifiable event can be re-verified"),
                    "\(again.stderr)")
            #expect(!(again.stdout + again.stderr).contains(signature))

            // The audit log names the re-verification, and never the header.
            let audit = try await Self.cli(["audit", "--action", "event.reverify", "--json"], f.server)
            let entries = try #require(try SupportCommandLineTests.object(audit)["entries"] as? [[String: Any]])
            #expect(entries.map { $0["target"] as? String } == [eventID])
            #expect(entries.first?["reason"] as? String == "provider back")
            #expect(!audit.stdout.contains(signature))
        }
    }

    @Test func aMalformedEchoFileNamesTheFieldAndNeverItsValue() async throws {
        try await LiveServer.run { server in
            let secret = "OAuthSecret-value-4711-must-not-be-printed"
            let cases: [(String, [String])] = [
                (#"{"service_provider": "https://api.digits.com/1.1/sdk/account.json"}"#, ["authorization: is missing"]),
                (#"{"authorization": "OAuth oauth_signature=\"\#(secret)\""}"#, ["service_provider: is missing"]),
                (#"{"service_provider": "https://api.digits.com/1.1/sdk/account.json", "authorization": "Bearer \#(secret)"}"#,
                 ["authorization: must be an OAuth 1.0a header"]),
                (#"{"service_provider": "not a url", "authorization": 42}"#,
                 ["service_provider: must be an absolute URL", "authorization: must be a string, not a number"]),
                (#"{"echo": {"authorization": "OAuth \#(secret)"}}"#, ["echo: is not a field of an echo object", "authorization: is missing"]),
                ("[\"\(secret)\"]", ["must be a JSON object, not an array"]),
                ("{\"authorization\": \"OAuth \(secret)", ["is not valid JSON"]),
                ("", ["it is empty"]),
            ]
            for (text, expected) in cases {
                let file = try Self.file(text)
                defer { try? FileManager.default.removeItem(at: file) }
                let result = try await Self.cli(["events", "reverify", "evt_1", "--reason", "r", "--echo", file.path], server)
                #expect(result.status == 1, "\(text)")
                #expect(result.stdout.isEmpty)
                #expect(result.stderr.hasPrefix("error: "), "\(result.stderr)")
                for message in expected {
                    #expect(result.stderr.contains(message), "\(text): \(result.stderr)")
                }
                #expect(result.stderr.contains("hint: --echo must hold one JSON object"), "\(result.stderr)")
                #expect(!result.stderr.contains(secret), "\(text): the value is never printed")
                #expect(!result.stderr.contains("cannot reach"))
            }

            // The same on standard input.
            let piped = try await Self.cli(["events", "reverify", "evt_1", "--reason", "r", "--echo", "-"], server,
                                           input: Data(#"{"service_provider": "https://api.digits.com/1.1/sdk/account.json"}"#.utf8))
            #expect(piped.status == 1)
            #expect(piped.stderr.hasPrefix("error: the echo object on standard input cannot be used"), "\(piped.stderr)")
            #expect(piped.stderr.contains("authorization: is missing"))

            let missing = try await Self.cli(["events", "reverify", "evt_1", "--reason", "r", "--echo", "/nonexistent/echo.json"], server)
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("cannot read the --echo file \"/nonexistent/echo.json\""), "\(missing.stderr)")

            // Before any request: no reason or no --echo is a usage error.
            let noReason = try await Self.cli(["events", "reverify", "evt_1", "--echo", "-"], server)
            #expect(noReason.status == 64)
            #expect(noReason.stderr.contains("--reason is required"), "\(noReason.stderr)")
            let noEcho = try await Self.cli(["events", "reverify", "evt_1", "--reason", "r"], server)
            #expect(noEcho.status == 64)
            #expect(noEcho.stderr.contains("--echo is required"), "\(noEcho.stderr)")
        }
    }

    @Test func auditAndReverifyDocumentTheirFlagsAndExitStatus() async throws {
        for (verb, flags) in [(["audit"], ["--action", "--actor", "--target", "--since", "--until", "--limit", "--all", "admin"]),
                              (["events", "reverify"], ["<id>", "--reason", "--echo", "echo-sign --json", "standard input"])] {
            let help = try await ChildProcess.run(verb + ["--help"])
            #expect(help.status == 0)
            for name in flags + ["--url", "--token", "--json", "ECHORELAY_URL", "ECHORELAY_TOKEN", "Exit status"] {
                #expect(help.stdout.contains(name), "\(verb) --help does not mention \(name)")
            }
        }
        #expect(try await ChildProcess.run(["--help"]).stdout.contains("audit"))
        #expect(try await ChildProcess.run(["events", "--help"]).stdout.contains("reverify"))
    }
}
