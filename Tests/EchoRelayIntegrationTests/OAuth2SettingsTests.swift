import EchoRelayCore
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `serve`'s `ECHORELAY_OAUTH2_*` settings, through the built binary: a half-configured
/// provider is refused at start, naming the setting and never quoting the secret; a complete
/// one serves, on its own or beside OAuth Echo, and says so in the log.
@Suite struct OAuth2SettingsTests {
    static let secret = "the-oauth2-client-s3cret"
    static let base = [
        "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:1/none", "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
    ]
    static let complete = [
        "ECHORELAY_OAUTH2_INTROSPECTION_URL": "https://idp.example/oauth2/introspect", "ECHORELAY_OAUTH2_CLIENT_ID": "echorelay",
        "ECHORELAY_OAUTH2_CLIENT_SECRET": secret,
    ]

    @Test(arguments: [
        (["ECHORELAY_OAUTH2_INTROSPECTION_URL": "https://idp.example/oauth2/introspect"],
         "ECHORELAY_OAUTH2_CLIENT_ID (--oauth2-client-id): is required with ECHORELAY_OAUTH2_INTROSPECTION_URL: re-verifying over OAuth 2 needs ECHORELAY_OAUTH2_INTROSPECTION_URL, ECHORELAY_OAUTH2_CLIENT_ID and ECHORELAY_OAUTH2_CLIENT_SECRET together"),
        (["ECHORELAY_OAUTH2_INTROSPECTION_URL": "https://idp.example/oauth2/introspect", "ECHORELAY_OAUTH2_CLIENT_ID": "echorelay"],
         "ECHORELAY_OAUTH2_CLIENT_SECRET (--oauth2-client-secret): is required with ECHORELAY_OAUTH2_INTROSPECTION_URL"),
        (["ECHORELAY_OAUTH2_CLIENT_SECRET": secret], "ECHORELAY_OAUTH2_INTROSPECTION_URL (--oauth2-introspection-url): is required with ECHORELAY_OAUTH2_CLIENT_SECRET"),
        (["ECHORELAY_OAUTH2_USERINFO_URL": "https://idp.example/oauth2/userinfo"],
         "ECHORELAY_OAUTH2_INTROSPECTION_URL (--oauth2-introspection-url): is required with ECHORELAY_OAUTH2_USERINFO_URL"),
        (["ECHORELAY_OAUTH2_ALLOW_HTTP": "1"], "ECHORELAY_OAUTH2_INTROSPECTION_URL (--oauth2-introspection-url): is required with ECHORELAY_OAUTH2_ALLOW_HTTP"),
        (complete.merging(["ECHORELAY_OAUTH2_INTROSPECTION_URL": "http://idp.example/oauth2/introspect"]) { $1 },
         "ECHORELAY_OAUTH2_INTROSPECTION_URL (--oauth2-introspection-url): must use https (plain http only with ECHORELAY_OAUTH2_ALLOW_HTTP=1, for local testing)"),
        (complete.merging(["ECHORELAY_OAUTH2_USERINFO_URL": "/oauth2/userinfo"]) { $1 },
         "ECHORELAY_OAUTH2_USERINFO_URL (--oauth2-userinfo-url): must be an absolute URL such as https://idp.example.com/oauth2/introspect"),
        (complete.merging(["ECHORELAY_OAUTH2_INTROSPECTION_URL": "https://echorelay:\(secret)@idp.example/introspect"]) { $1 },
         "ECHORELAY_OAUTH2_INTROSPECTION_URL (--oauth2-introspection-url): must not carry credentials"),
        // Neither provider at all: OAuth Echo's settings are asked for, naming OAuth 2 as the other way.
        ([:], "ECHORELAY_CONSUMER_KEY (--consumer-key): is required: the app's OAuth consumer key, which every echo header must carry (or re-verify over OAuth 2 only: ECHORELAY_OAUTH2_INTROSPECTION_URL"),
        // OAuth Echo half-configured beside OAuth 2 is still refused.
        (complete.merging(["ECHORELAY_ECHO_ALLOWED_HOSTS": "api.example.com"]) { $1 }, "ECHORELAY_CONSUMER_KEY (--consumer-key): is required"),
    ])
    func serveRefusesAHalfConfiguredProviderNamingTheSetting(settings: [String: String], message: String) async throws {
        let result = try await ChildProcess.run(["serve", "--port", String(try freeLoopbackPort())],
                                                environment: Self.base.merging(settings) { $1 })
        #expect(result.status != 0)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.secret) && !result.stdout.contains(Self.secret), "the secret is never quoted")
    }

    /// OAuth 2 alone is enough to serve (no consumer key); the log names the endpoint and the
    /// client, warns of plain http, and never shows the secret.
    @Test func oauth2AloneServesAndTheLogNamesItsEndpointButNotItsSecret() async throws {
        try await EmbeddedServeTests.withFolder { folder in
            let port = try freeLoopbackPort()
            let server = try ChildProcess(["serve", "--port", String(port)], environment: [
                "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret, "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken,
                "ECHORELAY_OAUTH2_INTROSPECTION_URL": "http://127.0.0.1:1/introspect", "ECHORELAY_OAUTH2_CLIENT_ID": "echorelay",
                "ECHORELAY_OAUTH2_CLIENT_SECRET": Self.secret, "ECHORELAY_OAUTH2_ALLOW_HTTP": "1", "ECHORELAY_LOG_LEVEL": "trace",
            ], workingDirectory: folder)
            defer { server.signal(SIGKILL) }
            let http = HTTPTestClient(port: port)
            try await server.waitUntilAnswering(http)
            #expect(try await http.get("/readyz").status == 200)
            server.signal(SIGTERM)
            _ = try await server.wait()
            let log = server.standardError
            #expect(log.contains("re-verifying OAuth 2 events by token introspection"), "\(log)")
            #expect(log.contains("http://127.0.0.1:1/introspect") && log.contains("echorelay"))
            #expect(log.contains("ECHORELAY_OAUTH2_ALLOW_HTTP is on"))
            #expect(!log.contains(Self.secret) && !server.standardOutput.contains(Self.secret))
        }
    }

    @Test func serveHelpListsEveryOAuth2Setting() async throws {
        let (status, wrapped, _) = try await ChildProcess.run(["serve", "--help"])
        #expect(status == 0)
        let help = wrapped.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for variable in ["ECHORELAY_OAUTH2_INTROSPECTION_URL", "ECHORELAY_OAUTH2_CLIENT_ID", "ECHORELAY_OAUTH2_CLIENT_SECRET",
                         "ECHORELAY_OAUTH2_USERINFO_URL", "ECHORELAY_OAUTH2_TOKEN_CLIENT_ID", "ECHORELAY_OAUTH2_ISSUER",
                         "ECHORELAY_OAUTH2_ALLOW_HTTP"] {
            #expect(help.contains("env: \(variable)"), "\(variable)")
        }
    }
}
