import EchoRelaySchema
import Foundation
import NIOHTTP1
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The `echorelay` binary itself, run as a child process the way an operator runs it.
@Suite struct CommandLineTests {
    @Test func serveHelpDocumentsEveryOptionAndItsEnvironmentVariable() async throws {
        let result = try await ChildProcess.run(["serve", "--help"])
        #expect(result.status == 0)
        for name in ["--host", "--port", "--database-url", "--ingest-secrets", "--admin-token", "--no-migrate", "--log-level",
                     "--role", "--consumer-key", "--echo-allowed-hosts", "--echo-allow-http", "--echo-timeout",
                     "--echo-retry-schedule", "--lease", "--verify-concurrency", "--replay-rate", "ECHORELAY_REPLAY_RATE",
                     "ECHORELAY_HOST", "ECHORELAY_PORT", "ECHORELAY_DATABASE_URL", "ECHORELAY_INGEST_SECRETS",
                     "ECHORELAY_ADMIN_TOKEN", "ECHORELAY_LOG_LEVEL", "ECHORELAY_ROLE", "ECHORELAY_CONSUMER_KEY",
                     "ECHORELAY_ECHO_ALLOWED_HOSTS", "ECHORELAY_ECHO_ALLOW_HTTP", "ECHORELAY_ECHO_TIMEOUT",
                     "ECHORELAY_ECHO_RETRY_SCHEDULE", "ECHORELAY_LEASE", "ECHORELAY_VERIFY_CONCURRENCY",
                     "--secret-key", "ECHORELAY_SECRET_KEY", "reseal", "--backlog-limit", "ECHORELAY_BACKLOG_LIMIT",
                     "--private-subscribers", "ECHORELAY_PRIVATE_SUBSCRIBERS", "--subscriber-ca-file", "ECHORELAY_SUBSCRIBER_CA_FILE",
                     "--set-issuer", "ECHORELAY_SET_ISSUER", "--set-audience", "ECHORELAY_SET_AUDIENCE", "--set-jwks-url",
                     "ECHORELAY_SET_JWKS_URL", "--set-allow-http", "ECHORELAY_SET_ALLOW_HTTP", "--set-push-token",
                     "ECHORELAY_SET_PUSH_TOKEN", "--threads", "ECHORELAY_THREADS"] {
            #expect(result.stdout.contains(name), "serve --help does not mention \(name)")
        }
    }

    @Test func migrateAppliesPendingMigrationsThenReportsUpToDate() async throws {
        try await TestDatabase.withFresh { database in
            let environment = ["ECHORELAY_DATABASE_URL": database.url, "ECHORELAY_LOG_LEVEL": "error"]
            let check = try await ChildProcess.run(["migrate", "--check"], environment: environment)
            #expect(check.status == 1)
            #expect(check.stdout.contains("pending: 1"))
            let first = try await ChildProcess.run(["migrate"], environment: environment)
            #expect(first.status == 0, "\(first.stderr)")
            let versions = SchemaFiles.postgres.map { String($0.version) }.joined(separator: ", ")
            #expect(first.stdout == "applied: \(versions)\n", "the versions applied, as on the embedded store: \(first.stdout)")
            let second = try await ChildProcess.run(["migrate"], environment: environment)
            #expect(second.stdout.contains("up to date"))
            #expect(try await ChildProcess.run(["migrate", "--check"], environment: environment).status == 0)
        }
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func serveAnswersThenStopsGracefullyOnASignal(signal: Int32) async throws {
        try await TestDatabase.withFresh { database in
            // The password is ignored by the test server (trust authentication) but must
            // never be printed, like the ingest secret and the admin token.
            let url = database.url.replacingOccurrences(of: "echorelay@", with: "echorelay:db-password-31337@")
            let port = try freeLoopbackPort()
            let adminToken = "admin-token-that-must-not-be-logged"
            let server = try ChildProcess(["serve", "--port", String(port)], environment: [
                "ECHORELAY_DATABASE_URL": url, "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
                "ECHORELAY_ADMIN_TOKEN": adminToken, "ECHORELAY_LOG_LEVEL": "trace",
            ].merging(Self.echoEnvironment) { $1 })
            let http = HTTPTestClient(port: port)
            try await server.waitUntilAnswering(http)
            #expect(try await http.get("/readyz").status == 200)
            let body = eventBody(id: "evt_cli")
            let signer = EventSigner(secret: LiveServer.ingestSecret)
            #expect(try await http.send(.POST, "/v1/events", headers: try signer.headers(for: body), body: body).status == 202)
            #expect(try await http.get("/v1/events/evt_cli", bearer: adminToken).status == 200)

            server.signal(signal)
            let status = try await server.wait(timeout: .seconds(15))
            #expect(status == 0)
            let logs = server.standardError + server.standardOutput
            #expect(logs.contains("Server started"))
            for secret in ["db-password-31337", adminToken, LiveServer.ingestSecret, String(LiveServer.ingestSecret.dropFirst(6))] {
                #expect(!logs.contains(secret), "a secret reached the logs")
            }
        }
    }

    @Test func serveRefusesToStartWithoutAnIngestSecret() async throws {
        let result = try await ChildProcess.run(["serve", "--port", String(try freeLoopbackPort())], environment: [
            "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:1/none",
        ])
        #expect(result.status != 0)
        #expect(result.stderr.contains("ECHORELAY_INGEST_SECRETS"))
    }

    /// A backlog limit that is not a positive number (or `off`) stops `serve` before it opens
    /// anything, with the setting named; from the flag as from the environment.
    @Test(arguments: ["0", "-5", "lots"])
    func serveRefusesABadBacklogLimitNamingTheSetting(value: String) async throws {
        let environment = [
            "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:1/none", "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
            "ECHORELAY_CONSUMER_KEY": "k", "ECHORELAY_ECHO_ALLOWED_HOSTS": "api.example.com",
        ]
        let ways: [(flag: [String], variable: [String: String])] = [(["--backlog-limit=\(value)"], [:]), ([], ["ECHORELAY_BACKLOG_LIMIT": value])]
        for (flag, variable) in ways {
            let result = try await ChildProcess.run(["serve", "--port", String(try freeLoopbackPort())] + flag,
                                                    environment: environment.merging(variable) { $1 })
            #expect(result.status != 0)
            #expect(result.stderr.contains("ECHORELAY_BACKLOG_LIMIT (--backlog-limit): must be a whole number of events from 1 to 100000000, or off, got \"\(value)\""),
                    "\(result.stderr)")
        }
    }

    /// A bad entry of the private-subscriber allow-list stops `serve` with the setting named.
    @Test func serveRefusesABadPrivateSubscriberEntryNamingTheSetting() async throws {
        let result = try await ChildProcess.run(["serve", "--port", String(try freeLoopbackPort()), "--private-subscribers", "hooks.internal,10.20.0.1/16"], environment: [
            "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:1/none", "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
            "ECHORELAY_CONSUMER_KEY": "k", "ECHORELAY_ECHO_ALLOWED_HOSTS": "api.example.com",
        ])
        #expect(result.status != 0)
        #expect(result.stderr.contains("ECHORELAY_PRIVATE_SUBSCRIBERS (--private-subscribers): \"10.20.0.1/16\" has bits set past its /16 prefix"), "\(result.stderr)")
    }

    /// A subscriber CA file that cannot be used stops `serve` at start, not every webhook later.
    @Test func serveRefusesASubscriberCAFileItCannotUse() async throws {
        let notPEM = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-ca-\(UUID().uuidString).pem")
        try Data("hello".utf8).write(to: notPEM)
        defer { try? FileManager.default.removeItem(at: notPEM) }
        for (path, reason) in [("/nonexistent/ca.pem", "cannot read \"/nonexistent/ca.pem\""),
                               (notPEM.path, "\"\(notPEM.path)\" ")] {
            let result = try await ChildProcess.run(["serve", "--port", String(try freeLoopbackPort())], environment: [
                "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:1/none", "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
                "ECHORELAY_CONSUMER_KEY": "k", "ECHORELAY_ECHO_ALLOWED_HOSTS": "api.example.com", "ECHORELAY_SUBSCRIBER_CA_FILE": path,
            ])
            #expect(result.status != 0)
            #expect(result.stderr.contains("ECHORELAY_SUBSCRIBER_CA_FILE (--subscriber-ca-file): " + reason), "\(result.stderr)")
        }
    }

    /// Shared Signals settings that cannot serve stop `serve` at start, naming the setting and
    /// never quoting the push token.
    @Test(arguments: [
        (["ECHORELAY_SET_ISSUER": "https://idp.example/"],
         "ECHORELAY_SET_AUDIENCE (--set-audience): is required to receive Shared Signals (ECHORELAY_SET_ISSUER is set): set ECHORELAY_SET_ISSUER and ECHORELAY_SET_AUDIENCE together"),
        (["ECHORELAY_SET_PUSH_TOKEN": "a-push-token-of-enough-length"], "ECHORELAY_SET_ISSUER (--set-issuer): is required to receive Shared Signals"),
        (["ECHORELAY_SET_ISSUER": "https://idp.example/", "ECHORELAY_SET_AUDIENCE": "echorelay",
          "ECHORELAY_SET_JWKS_URL": "http://idp.example/jwks.json"],
         "ECHORELAY_SET_JWKS_URL (--set-jwks-url): must use https (plain http only with ECHORELAY_SET_ALLOW_HTTP=1)"),
        (["ECHORELAY_SET_ISSUER": "https://idp.example/", "ECHORELAY_SET_AUDIENCE": "echorelay",
          "ECHORELAY_SET_JWKS_URL": "https://idp.example/jwks.json", "ECHORELAY_SET_PUSH_TOKEN": "short-secret"],
         "ECHORELAY_SET_PUSH_TOKEN (--set-push-token): must be at least 16 characters long"),
    ])
    func serveRefusesSharedSignalsSettingsThatCannotServe(settings: [String: String], message: String) async throws {
        let result = try await ChildProcess.run(["serve", "--port", String(try freeLoopbackPort())], environment: [
            "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:1/none", "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
            "ECHORELAY_CONSUMER_KEY": "k", "ECHORELAY_ECHO_ALLOWED_HOSTS": "api.example.com",
        ].merging(settings) { $1 })
        #expect(result.status != 0)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains("short-secret") && !result.stderr.contains("a-push-token-of-enough-length"))
    }

    @Test(arguments: [1, 3])
    func serveRunsTheNetworkOnTheThreadsItIsGiven(threads: Int) async throws {
        try await TestDatabase.withFresh { database in
            let port = try freeLoopbackPort()
            let server = try ChildProcess(["serve", "--port", String(port)], environment: [
                "ECHORELAY_DATABASE_URL": database.url, "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
                "ECHORELAY_LOG_LEVEL": "error", "ECHORELAY_THREADS": String(threads),
            ].merging(Self.echoEnvironment) { $1 })
            defer { server.signal(SIGKILL) }
            let http = HTTPTestClient(port: port)
            try await server.waitUntilAnswering(http)
            #expect(try await http.get("/readyz").status == 200, "it serves, database included")
            // NIO names each event loop's thread NIO-SGLTN-<group>-#<loop>.
            let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/task").map {
                try String(contentsOfFile: "/proc/\(server.pid)/task/\($0)/comm", encoding: .utf8)
            }
            #expect(names.filter { $0.hasPrefix("NIO-SGLTN-") }.count == threads, "\(names.sorted())")
        }
    }

    @Test(arguments: ["0", "many", "1025"])
    func serveRefusesAThreadCountItCannotUse(value: String) async throws {
        let result = try await ChildProcess.run(["serve"], environment: [
            "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:1/none", "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
            "ECHORELAY_THREADS": value,
        ].merging(Self.echoEnvironment) { $1 })
        #expect(result.status != 0)
        #expect(result.stderr.contains("ECHORELAY_THREADS (--threads): must be a whole number from 1 to 1024, got \"\(value)\""), "\(result.stderr)")
    }

    @Test func serveRefusesABadDatabaseURLWithoutRepeatingIt() async throws {
        let result = try await ChildProcess.run(["serve"], environment: [
            "ECHORELAY_DATABASE_URL": "mysql://root:hunter2@localhost/db", "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
        ])
        #expect(result.status != 0)
        #expect(result.stderr.contains("ECHORELAY_DATABASE_URL"))
        #expect(!result.stderr.contains("hunter2"))
    }

    @Test func readinessFailsWhileTheDatabaseIsUnreachable() async throws {
        let port = try freeLoopbackPort()
        let server = try ChildProcess(["serve", "--port", String(port), "--no-migrate"], environment: [
            "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:\(try freeLoopbackPort())/none?sslmode=disable",
            "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret, "ECHORELAY_LOG_LEVEL": "critical",
        ].merging(Self.echoEnvironment) { $1 })
        defer { server.signal(SIGKILL) }
        let http = HTTPTestClient(port: port)
        try await server.waitUntilAnswering(http)
        let ready = try await http.get("/readyz")
        #expect(ready.status == 503)
        #expect(ready.json?["reason"] as? String == "database unreachable", "names no host to whoever asks: \(ready.text)")
        // Ingest answers 503 (retry later), never a false 202, and never hangs.
        let body = eventBody()
        let response = try await http.send(.POST, "/v1/events", headers: try EventSigner(secret: LiveServer.ingestSecret).headers(for: body), body: body)
        #expect(response.status == 503)
        #expect(response.headers["Retry-After"].first != nil)
    }

    /// Echo settings that allow no real host, so nothing leaves the machine.
    static let echoEnvironment = ["ECHORELAY_CONSUMER_KEY": "test-consumer-key", "ECHORELAY_ECHO_ALLOWED_HOSTS": "127.0.0.1:1"]

}
