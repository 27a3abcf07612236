import EchoRelayCore
import EchoRelaySchema
import Foundation
import NIOHTTP1
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `echorelay serve` on the embedded default: no database server, no settings, one command.
@Suite struct EmbeddedServeTests {
    /// A fresh, empty working folder, removed afterwards.
    static func withFolder(_ body: (URL) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-embedded-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(folder)
    }

    static func value(after prefix: String, in text: String) -> String? {
        text.split(separator: "\n").lazy.compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix(prefix) ? String(trimmed.dropFirst(prefix.count)) : nil
        }.first
    }

    @Test func theFirstRunMakesItsSecretsOncePrintsThemAndKeepsThemInTheFile() async throws {
        try await Self.withFolder { folder in
            let port = try freeLoopbackPort()
            let http = HTTPTestClient(port: port)
            let first = try ChildProcess(["serve", "--demo", "--port", String(port)], environment: [:], workingDirectory: folder)
            try await first.waitUntilAnswering(http)
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("echorelay.sqlite").path))
            #expect(try await http.get("/readyz").status == 200)

            // The first run prints a ready-to-paste example: the ingest secret and an admin token.
            let deadline = ContinuousClock.now + .seconds(5)
            while !first.standardOutput.contains("ECHORELAY_TOKEN="), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            let printed = first.standardOutput
            let secret = try #require(Self.value(after: "export ECHORELAY_INGEST_SECRETS=", in: printed))
            let token = try #require(Self.value(after: "export ECHORELAY_TOKEN=", in: printed))
            #expect(secret.hasPrefix("whsec_") && token.hasPrefix("er_"))
            #expect(printed.contains("export ECHORELAY_URL=http://127.0.0.1:\(port)"))
            #expect(!first.standardError.contains(secret) && !first.standardError.contains(token), "secrets never reach the log")
            #expect(try await http.get("/v1/subscriptions", bearer: token).status == 200)
            let body = eventBody(id: "evt_first_run")
            #expect(try await http.send(.POST, "/v1/events", headers: try EventSigner(secret: secret).headers(for: body), body: body).status == 202)

            // A second serve on the same file is refused while the first holds it.
            let second = try await ChildProcess.run(["serve", "--demo", "--port", String(try freeLoopbackPort())],
                                                    workingDirectory: folder)
            #expect(second.status != 0)
            #expect(second.stderr.contains("in use by another EchoRelay process"), "\(second.stderr)")
            #expect(second.stderr.contains("PostgreSQL"))

            first.signal(SIGTERM)
            #expect(try await first.wait() == 0)

            // A restart keeps both, prints neither, and still has the event.
            let restarted = try ChildProcess(["serve", "--demo", "--port", String(port)], environment: [:], workingDirectory: folder)
            defer { restarted.signal(SIGKILL) }
            try await restarted.waitUntilAnswering(http)
            #expect(try await http.get("/v1/events/evt_first_run", bearer: token).status == 200)
            let again = eventBody(id: "evt_second_run")
            #expect(try await http.send(.POST, "/v1/events", headers: try EventSigner(secret: secret).headers(for: again), body: again).status == 202)
            #expect(!restarted.standardOutput.contains("whsec_") && !restarted.standardOutput.contains("er_"))
        }
    }

    @Test func aKilledServeLeavesNoLockBehind() async throws {
        try await Self.withFolder { folder in
            let environment = ["ECHORELAY_DATABASE_URL": "sqlite:data/relay.sqlite", "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
                               "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken]
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("data"), withIntermediateDirectories: true)
            let port = try freeLoopbackPort()
            let http = HTTPTestClient(port: port)
            let first = try ChildProcess(["serve", "--demo", "--port", String(port)], environment: environment, workingDirectory: folder)
            try await first.waitUntilAnswering(http)
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("data/relay.sqlite").path), "sqlite:PATH names the file")
            #expect(!first.standardOutput.contains("first run"), "nothing is made when both are configured")
            first.signal(SIGKILL)
            try await first.wait()

            let second = try ChildProcess(["serve", "--demo", "--port", String(port)], environment: environment, workingDirectory: folder)
            defer { second.signal(SIGKILL) }
            try await second.waitUntilAnswering(http)
            #expect(try await http.get("/readyz").status == 200)
        }
    }

    @Test func withoutAProviderServeSaysWhatToSetAndHowToTryItOut() async throws {
        try await Self.withFolder { folder in
            let result = try await ChildProcess.run(["serve", "--port", String(try freeLoopbackPort())], workingDirectory: folder)
            #expect(result.status != 0)
            #expect(result.stderr.contains("ECHORELAY_CONSUMER_KEY"))
            #expect(result.stderr.contains("echorelay serve --demo"))
        }
    }

    @Test func splittingTheWorkOverProcessesNeedsPostgreSQL() async throws {
        try await Self.withFolder { folder in
            let result = try await ChildProcess.run(["serve", "--demo", "--role", "ingest", "--port", String(try freeLoopbackPort())],
                                                    workingDirectory: folder)
            #expect(result.status != 0)
            #expect(result.stderr.contains("ECHORELAY_ROLE"))
            #expect(result.stderr.contains("PostgreSQL"))
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("echorelay.sqlite").path), "refused before touching the file")
        }
    }

    @Test func tokensAndMigrateWorkOnTheEmbeddedFile() async throws {
        try await Self.withFolder { folder in
            let check = try await ChildProcess.run(["migrate", "--check"], workingDirectory: folder)
            #expect(check.status == 1 && check.stdout.contains("pending: 1"))
            let versions = SchemaFiles.sqlite.map { String($0.version) }.joined(separator: ", ")
            let migrated = try await ChildProcess.run(["migrate"], workingDirectory: folder)
            #expect(migrated.stdout == "applied: \(versions)\n", "the versions applied, as on PostgreSQL: \(migrated.stdout)")
            #expect(try await ChildProcess.run(["migrate"], workingDirectory: folder).stdout == "up to date\n")
            let created = try await ChildProcess.run(["tokens", "create", "--role", "support", "--name", "Sam"], workingDirectory: folder)
            #expect(created.status == 0, "\(created.stderr)")
            let token = try #require(created.stdout.split(whereSeparator: \.isWhitespace).last.map(String.init))

            let port = try freeLoopbackPort()
            let http = HTTPTestClient(port: port)
            let server = try ChildProcess(["serve", "--demo", "--port", String(port)],
                                          environment: ["ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret], workingDirectory: folder)
            defer { server.signal(SIGKILL) }
            try await server.waitUntilAnswering(http)
            #expect(try await http.get("/v1/users/someone/events", bearer: token).status == 200)
            // The running serve holds the file: without a token to ask it, the command says how.
            let busy = try await ChildProcess.run(["tokens", "list"], workingDirectory: folder)
            #expect(busy.status != 0 && busy.stderr.contains("in use by a running echorelay serve"), "\(busy.stderr)")
        }
    }
}
