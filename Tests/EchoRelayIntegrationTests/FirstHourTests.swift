import Foundation
import NIOHTTP1
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What a newcomer meets in the first hour, through the binary as they run it: a port that is
/// taken, a number out of range, and the way from the server's address to its console.
@Suite struct FirstHourTests {
    @Test func aPortInUseNamesTheAddressAndTheFixAndTheFirstRunsSecretsWaitForARunThatListens() async throws {
        try await EmbeddedServeTests.withFolder { holderFolder in
            try await EmbeddedServeTests.withFolder { folder in
                let port = try freeLoopbackPort()
                let http = HTTPTestClient(port: port)
                let holder = try ChildProcess(["serve", "--demo", "--port", String(port)], environment: [
                    "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret, "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken,
                ], workingDirectory: holderFolder)
                defer { holder.signal(SIGKILL) }
                try await holder.waitUntilAnswering(http)

                let refused = try await ChildProcess.run(["serve", "--demo", "--port", String(port)], workingDirectory: folder)
                #expect(refused.status != 0)
                #expect(refused.stderr.contains("ECHORELAY_PORT (--port): cannot listen on 127.0.0.1:\(port): the address is already in use"),
                        "\(refused.stderr)")
                #expect(refused.stderr.contains("choose another port with --port or ECHORELAY_PORT"), "\(refused.stderr)")
                #expect(!refused.stderr.contains("CancellationError") && !refused.stderr.contains("errno"), "\(refused.stderr)")
                #expect(!refused.stdout.contains("whsec_") && !refused.stdout.contains("er_"), "nothing is shown by a run that cannot listen")

                // The next run that listens shows the first run's secrets, and they work.
                let freePort = try freeLoopbackPort()
                let freeHTTP = HTTPTestClient(port: freePort)
                let server = try ChildProcess(["serve", "--demo", "--port", String(freePort)], workingDirectory: folder)
                defer { server.signal(SIGKILL) }
                try await server.waitUntilAnswering(freeHTTP)
                let deadline = ContinuousClock.now + .seconds(10)
                while !server.standardOutput.contains("/console"), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                let printed = server.standardOutput
                let secret = try #require(EmbeddedServeTests.value(after: "export ECHORELAY_INGEST_SECRETS=", in: printed), "\(printed)")
                let token = try #require(EmbeddedServeTests.value(after: "export ECHORELAY_TOKEN=", in: printed))
                #expect(printed.contains("The console: http://127.0.0.1:\(freePort)/console"), "\(printed)")
                #expect(try await freeHTTP.get("/v1/subscriptions", bearer: token).status == 200)
                let body = eventBody(id: "evt_after_port_in_use")
                #expect(try await freeHTTP.send(.POST, "/v1/events", headers: try EventSigner(secret: secret).headers(for: body),
                                                body: body).status == 202)
            }
        }
    }

    /// Every numeric setting is checked at start: nothing wraps (70000 is not port 4464) or
    /// becomes a random port (65536), and the error names the flag and the variable.
    @Test(arguments: [
        ("port", "70000", "1 to 65535"), ("port", "65536", "1 to 65535"), ("port", "0", "1 to 65535"),
        ("verify-concurrency", "0", "1 to 4096"), ("delivery-concurrency", "-3", "1 to 4096"),
        ("subscription-concurrency", "5000", "1 to 4096"), ("replay-rate", "0", "1 to 100000"),
        ("threads", "2000", "1 to 1024"),
    ])
    func aNumberOutOfRangeIsRefusedNamingTheFlagAndTheVariable(flag: String, value: String, range: String) async throws {
        let variable = "ECHORELAY_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
        let expected = "\(variable) (--\(flag)): must be a whole number from \(range), got \"\(value)\""
        for (arguments, environment) in [(["--\(flag)=\(value)"], [String: String]()), ([], [variable: value])] {
            try await EmbeddedServeTests.withFolder { folder in
                let result = try await ChildProcess.run(["serve", "--demo"] + arguments, environment: environment, workingDirectory: folder)
                #expect(result.status != 0)
                #expect(result.stderr.contains(expected), "\(result.stderr)")
                #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("echorelay.sqlite").path),
                        "refused before the store is made")
            }
        }
    }

    @Test func aLeaseNoLongerThanTheEchoTimeoutSaysBothValues() async throws {
        try await EmbeddedServeTests.withFolder { folder in
            let result = try await ChildProcess.run(["serve", "--demo", "--lease", "5s"], workingDirectory: folder)
            #expect(result.status != 0)
            #expect(result.stderr.contains("ECHORELAY_LEASE (--lease): must be longer than ECHORELAY_ECHO_TIMEOUT (5s), got 5s"),
                    "\(result.stderr)")
        }
    }

    /// The server's own address leads to the console: `/` is a page with links, and the log
    /// says where the console is.
    @Test func theServersAddressLeadsToTheConsole() async throws {
        try await EmbeddedServeTests.withFolder { folder in
            let port = try freeLoopbackPort()
            let http = HTTPTestClient(port: port)
            let server = try ChildProcess(["serve", "--demo", "--port", String(port)], environment: [
                "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret, "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken,
            ], workingDirectory: folder)
            defer { server.signal(SIGKILL) }
            try await server.waitUntilAnswering(http)
            let index = try await http.get("/")
            #expect(index.status == 200)
            #expect(index.headers.first(name: "Content-Type")?.hasPrefix("text/html") == true)
            for link in ["href=\"/console\"", "href=\"/openapi.yaml\"", "docs/"] {
                #expect(index.text.contains(link), "\(index.text)")
            }
            let console = try await http.get("/console")  // followed to the sign-in page
            #expect(console.status == 200 && console.text.contains("Sign in"), "\(console.text)")
            let deadline = ContinuousClock.now + .seconds(5)
            while !server.standardError.contains("console at"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(server.standardError.contains("console at http://127.0.0.1:\(port)/console"), "\(server.standardError)")
        }
    }
}
