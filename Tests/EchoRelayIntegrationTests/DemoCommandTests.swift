import EchoRelayCore
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `echorelay demo` against a real `echorelay serve --demo` child process on a temporary
/// embedded store. `serve --demo` accepts OAuth Echo only from the demo provider's fixed
/// port (127.0.0.1:8181), so only one test here binds it; the others fail before any
/// echo request and use free ports.
@Suite(.serialized) struct DemoCommandTests {
    struct Server {
        let port: Int
        let http: HTTPTestClient
        let environment: [String: String]

        /// `GET /v1/subscriptions` as the admin: the ids of every subscription.
        func subscriptionIDs() async throws -> [String] {
            let answer = try await http.get("/v1/subscriptions", bearer: LiveServer.adminToken)
            #expect(answer.status == 200)
            let list = try #require(answer.json?["subscriptions"] as? [[String: Any]])
            return list.compactMap { $0["id"] as? String }
        }
    }

    /// A `serve` child on a fresh SQLite file with its secrets given, so nothing is made.
    static func withServer(demo: Bool = true, _ body: (Server) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let port = try freeLoopbackPort()
        var environment = [
            "ECHORELAY_DATABASE_URL": "sqlite:" + folder.appendingPathComponent("x.sqlite").path,
            "ECHORELAY_PORT": String(port), "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
            "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken, "ECHORELAY_LOG_LEVEL": "warning",
        ]
        if !demo {
            environment["ECHORELAY_CONSUMER_KEY"] = "some-app"
            environment["ECHORELAY_ECHO_ALLOWED_HOSTS"] = "api.digits.com"
        }
        let child = try ChildProcess(demo ? ["serve", "--demo"] : ["serve"], environment: environment)
        defer { if child.isRunning { child.signal(SIGKILL) } }
        let http = HTTPTestClient(port: port)
        try await child.waitUntilAnswering(http)
        try await body(Server(port: port, http: http, environment: [
            "ECHORELAY_URL": "http://127.0.0.1:\(port)", "ECHORELAY_TOKEN": LiveServer.adminToken,
        ]))
        child.signal(SIGTERM)
        _ = try await child.wait(timeout: .seconds(15))
    }

    /// The README's tour, command by command, as printed, on a fresh folder and the default
    /// ports: `serve --demo`, its export lines pasted, the demo, then the next steps the demo
    /// prints and the first-run banner's own example. `swift run X` runs the built X, as
    /// `swift run` does once it has built.
    @Test func theReadmesTourWorksAsPrinted() async throws {
        let readme = try String(contentsOf: DocsExamplesTests.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "### A tour in a minute").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```sh\n").dropFirst().first?.components(separatedBy: "```").first)
        let commands = block.split(separator: "\n").map { String($0.split(separator: "#", maxSplits: 1)[0]).trimmingCharacters(in: .whitespaces) }
        #expect(commands.first == "swift run echorelay serve --demo" && commands.last == "swift run echorelay demo", "\(commands)")
        let shim = #"swift() { [ "$1" = run ] || { echo "not swift run: $*" >&2; return 64; }; shift; "$@"; }"#
        let bash = URL(fileURLWithPath: "/bin/bash")
        let path = ChildProcess.echorelayBinary.deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-tour-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // Terminal 1.
        let serve = try ChildProcess(["-c", shim.replacingOccurrences(of: #"shift; "$@""#, with: #"shift; exec "$@""#) + "\n" + commands[0]],
                                     environment: ["PATH": path], workingDirectory: folder, executable: bash)
        defer { if serve.isRunning { serve.signal(SIGKILL) } }
        try await serve.waitUntilAnswering(HTTPTestClient(port: 8080))
        let deadline = ContinuousClock.now + .seconds(10)
        while !serve.standardOutput.contains("/console"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let banner = serve.standardOutput
        let printed = banner.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("export ") }

        // Terminal 2: each export line of the README, as serve printed it where the README has a placeholder.
        var exports: [String] = []
        for line in commands.dropFirst().dropLast() {
            let variable = try #require(line.split(separator: "=").first.map(String.init), "\(line)")
            let given = try #require(printed.first { $0.hasPrefix(variable + "=") }, "serve printed no \(variable):\n\(banner)")
            #expect(line.contains("…") || line == given, "the README's \(line) is not what serve printed: \(given)")
            exports.append(given)
        }
        func run(_ command: String) async throws -> (status: Int32, stdout: String, stderr: String) {
            let child = try ChildProcess(["-c", ([shim] + exports + [command]).joined(separator: "\n")], environment: ["PATH": path],
                                         workingDirectory: folder, executable: bash)
            let status = try await child.wait(timeout: .seconds(90))
            return (status, child.standardOutput, child.standardError)
        }
        let demo = try await run(commands.last!)
        #expect(demo.status == 0, "\(demo.stdout)\n\(demo.stderr)")

        // What it says to try next, and the banner's own example, work as printed.
        let next = demo.stdout.components(separatedBy: "Look around").last?.split(separator: "\n")
            .filter { $0.contains("   # ") }.map { String($0.split(separator: "#")[0]).trimmingCharacters(in: .whitespaces) } ?? []
        let tryIt = banner.components(separatedBy: "Try it").last?.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("curl ") } ?? []
        #expect(next.count == 4 && tryIt.count == 1, "\(demo.stdout)\n\(banner)")
        for command in next + tryIt {
            let result = try await run(command)
            #expect(result.status == 0 && !result.stdout.isEmpty && !result.stdout.contains("error"), "\(command):\n\(result.stdout)\(result.stderr)")
        }
        serve.signal(SIGTERM)
        #expect(try await serve.wait(timeout: .seconds(15)) == 0)
    }

    @Test func theDemoToursThePipelineAndLeavesNothingBehind() async throws {
        try await Self.withServer { server in
            var environment = server.environment
            environment["ECHORELAY_INGEST_SECRETS"] = LiveServer.ingestSecret + ",whsec_c2Vjb25kLXNlY3JldA=="
            let demo = try ChildProcess(["demo", "--subscriber-port", String(try freeLoopbackPort())], environment: environment)
            let status = try await demo.wait(timeout: .seconds(90))
            let output = demo.standardOutput
            #expect(status == 0, "stdout:\n\(output)\nstderr:\n\(demo.standardError)")

            // Every step, in order.
            var position = output.startIndex
            for step in 1...7 {
                let range = try #require(output.range(of: "[\(step)/7]", range: position..<output.endIndex), "step \(step) missing")
                position = range.upperBound
            }
            // The timeline: verified events with the webhook ids the subscriber received, the
            // genuine deactivation verified, the forged one rejected.
            #expect(output.contains("verified (provider_confirmed)"))
            #expect(output.contains("verified (known_token_expired)"))
            #expect(output.contains("rejected (unknown_token)"))
            #expect(output.contains("forged: nothing delivered"))
            #expect(!output.contains("UNEXPECTED"))
            #expect(output.contains("8 events: 7 verified and delivered, 1 forged deactivation rejected (unknown_token)"))
            let printedWebhookIDs = Set(output.matches(of: /delivered, webhook-id (msg_[A-Za-z0-9]+), signature valid/).map { String($0.1) })
            #expect(printedWebhookIDs.count == 7)

            // The webhook ids printed are those the server recorded for the demo users' events.
            let users = Set(output.matches(of: /demo-[0-9a-f]{6}-[0-9]+/).map { String($0.0) })
            #expect(users.count == 3)
            var recorded: Set<String> = []
            for user in users {
                let timeline = try await server.http.get("/v1/users/\(user)/events", bearer: LiveServer.adminToken)
                let events = try #require(timeline.json?["events"] as? [[String: Any]])
                for event in events {
                    let id = try #require(event["id"] as? String)
                    let detail = try await server.http.get("/v1/events/\(id)", bearer: LiveServer.adminToken)
                    let deliveries = try #require(detail.json?["deliveries"] as? [[String: Any]])
                    recorded.formUnion(deliveries.compactMap { $0["webhook_id"] as? String })
                }
            }
            #expect(recorded == printedWebhookIDs)

            // Its subscription is gone, and no secret was printed.
            #expect(try await server.subscriptionIDs().isEmpty)

            // The next steps it prints work as printed, in the demo's terminal.
            let steps = try #require(output.components(separatedBy: "Look around").last?.split(separator: "\n")
                .filter { $0.contains("   # ") }.map { String($0.split(separator: "#")[0]).trimmingCharacters(in: .whitespaces) })
            #expect(steps.count == 4, "\(output)")
            #expect(output.contains("The console: http://127.0.0.1:\(server.port)/console"))
            for step in steps {
                // Printed as `swift run echorelay …` (the binary runs from the build folder).
                let arguments = try #require(step.components(separatedBy: "echorelay ").last).split(separator: " ").map(String.init)
                let result = try await ChildProcess.run(arguments, environment: server.environment)
                #expect(result.status == 0 && !result.stdout.isEmpty, "\(step):\n\(result.stdout)\(result.stderr)")
            }
            for secret in [LiveServer.adminToken, LiveServer.ingestSecret, String(LiveServer.ingestSecret.dropFirst(6))] {
                #expect(!output.contains(secret) && !demo.standardError.contains(secret), "a secret was printed")
            }
        }
    }

    /// `--provider oauth2`: the same tour over OAuth 2 on `serve --demo`, whose stand-in
    /// answers introspection and UserInfo; the genuine deactivation is proven by the death of a
    /// token EchoRelay verified, and the forged one, with a token never issued, is rejected.
    @Test func theDemoToursTheOAuth2PathAndRejectsTheForgedDeactivation() async throws {
        try await Self.withServer { server in
            let demo = try ChildProcess(["demo", "--provider", "oauth2", "--subscriber-port", String(try freeLoopbackPort())],
                                        environment: server.environment.merging(["ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret]) { $1 })
            let status = try await demo.wait(timeout: .seconds(90))
            let output = demo.standardOutput
            #expect(status == 0, "stdout:\n\(output)\nstderr:\n\(demo.standardError)")
            #expect(output.contains("POST /oauth2/introspect (RFC 7662)"), "\(output)")
            #expect(output.contains("POST introspect → 200 active"))
            #expect(output.contains("GET userinfo → 200"))
            #expect(output.contains("verified (provider_confirmed)"))
            #expect(output.contains("verified (known_token_inactive)"))
            #expect(output.contains("rejected (unknown_token)"))
            #expect(!output.contains("UNEXPECTED") && !output.contains("account.json"))
            #expect(output.contains("8 events: 7 verified and delivered, 1 forged deactivation rejected (unknown_token)"))

            // Every event took the OAuth 2 path; nothing is left behind.
            let user = try #require(output.firstMatch(of: /demo-[0-9a-f]{6}-1/).map { String($0.0) })
            let timeline = try #require(try await server.http.get("/v1/users/\(user)/events", bearer: LiveServer.adminToken).json)
            for event in try #require(timeline["events"] as? [[String: Any]]) {
                let detail = try await server.http.get("/v1/events/\(try #require(event["id"] as? String))", bearer: LiveServer.adminToken)
                #expect(detail.json?["path"] as? String == "oauth2")
            }
            #expect(try await server.subscriptionIDs().isEmpty)
        }
    }

    @Test func aWrongIngestSecretStopsWithAClearErrorAndCleansUp() async throws {
        try await Self.withServer { server in
            var environment = server.environment
            let wrongSecret = WebhookSecret.generate()
            environment["ECHORELAY_INGEST_SECRETS"] = wrongSecret
            // It fails before any echo request, so the provider need not be on the demo port.
            let demo = try ChildProcess([
                "demo", "--provider-port", String(try freeLoopbackPort()), "--subscriber-port", String(try freeLoopbackPort()),
            ], environment: environment)
            let status = try await demo.wait(timeout: .seconds(60))
            #expect(status == 1)
            let errors = demo.standardError
            #expect(errors.contains("error: the server refused the demo's signed event (401): the ingest secret is not one of the server's"), "\(errors)")
            #expect(errors.contains("ECHORELAY_INGEST_SECRETS"))
            #expect(demo.standardOutput.contains("[7/7] Cleaning up"))
            #expect(demo.standardOutput.contains("Deleted subscription"))
            #expect(try await server.subscriptionIDs().isEmpty)
            #expect(!(demo.standardOutput + errors).contains(String(wrongSecret.dropFirst(6))), "the secret was printed")
        }
    }

    @Test func aServerNotInDemoModeIsNamedAsTheProblem() async throws {
        try await Self.withServer(demo: false) { server in
            var environment = server.environment
            environment["ECHORELAY_INGEST_SECRETS"] = LiveServer.ingestSecret
            let demo = try ChildProcess([
                "demo", "--provider-port", String(try freeLoopbackPort()), "--subscriber-port", String(try freeLoopbackPort()),
            ], environment: environment)
            let status = try await demo.wait(timeout: .seconds(60))
            #expect(status == 1)
            #expect(demo.standardError.contains("echorelay serve --demo"), "\(demo.standardError)")
            #expect(try await server.subscriptionIDs().isEmpty)
        }
    }

    @Test func missingSettingsSayWhereToFindThem() async throws {
        let noToken = try await ChildProcess.run(["demo"], environment: ["ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret])
        #expect(noToken.status == 1)
        #expect(noToken.stderr.contains("ECHORELAY_TOKEN"))
        let noSecret = try await ChildProcess.run(["demo"], environment: ["ECHORELAY_TOKEN": LiveServer.adminToken])
        #expect(noSecret.status == 1)
        #expect(noSecret.stderr.contains("ECHORELAY_INGEST_SECRETS") && noSecret.stderr.contains("first run"))
        let help = try await ChildProcess.run(["demo", "--help"])
        #expect(help.status == 0)
        for flag in ["--url", "--token", "--ingest-secret", "--provider-port", "--subscriber-port", "--users", "--json",
                     "echorelay serve --demo"] {
            #expect(help.stdout.contains(flag), "demo --help does not mention \(flag)")
        }
    }
}
