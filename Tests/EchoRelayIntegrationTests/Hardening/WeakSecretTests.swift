import EchoRelayCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TestSupport
import Testing

/// `serve` refuses a token or secret set by hand that is weaker than 128 bits, naming the
/// setting and how to make a good one, and never quoting it.
@Suite struct WeakSecretTests {
    static let base = [
        "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:1/none", "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
        "ECHORELAY_CONSUMER_KEY": "k", "ECHORELAY_ECHO_ALLOWED_HOSTS": "api.example.com",
    ]
    static let sharedSignals = [
        "ECHORELAY_SET_ISSUER": "https://idp.example/", "ECHORELAY_SET_AUDIENCE": "echorelay",
        "ECHORELAY_SET_JWKS_URL": "https://idp.example/jwks.json",
    ]
    static let shortKey = "whsec_" + Data(repeating: 7, count: 15).base64EncodedString()

    @Test(arguments: [
        (["ECHORELAY_ADMIN_TOKEN": "correcthorsebattery"], "ECHORELAY_ADMIN_TOKEN (--admin-token): is weaker than 128 bits", "correcthorsebattery"),
        (["ECHORELAY_ADMIN_TOKEN": String(repeating: "ab", count: 40)], "ECHORELAY_ADMIN_TOKEN (--admin-token): is weaker than 128 bits", "abab"),
        (["ECHORELAY_ADMIN_TOKEN": "2026-12-04T10:00:00"], "ECHORELAY_ADMIN_TOKEN (--admin-token): is weaker than 128 bits", "2026-12-04"),
        (["ECHORELAY_INGEST_SECRETS": "\(LiveServer.ingestSecret),\(shortKey)"],
         "ECHORELAY_INGEST_SECRETS (--ingest-secrets): secret 2 has a key of 15 bytes, and at least 16 (128 bits) are needed; generate one with: echorelay secret",
         shortKey),
        (sharedSignals.merging(["ECHORELAY_SET_PUSH_TOKEN": String(repeating: "x", count: 64)]) { $1 },
         "ECHORELAY_SET_PUSH_TOKEN (--set-push-token): is weaker than 128 bits", "xxxx"),
    ])
    func serveRefusesAWeakSecretNamingTheSettingWithoutQuotingIt(settings: [String: String], message: String, secret: String) async throws {
        let result = try await ChildProcess.run(["serve", "--port", String(try freeLoopbackPort())],
                                                environment: Self.base.merging(settings) { $1 })
        #expect(result.status != 0)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.contains("echorelay secret"), "says how to make a good one")
        #expect(!result.stderr.contains(secret) && !result.stdout.contains(secret), "\(result.stderr)")
    }

    /// What `echorelay secret` prints passes as every kind of secret: `serve` starts with it.
    @Test func whatEchorelaySecretPrintsIsStrongEnoughForEverySetting() async throws {
        let printed = try await ChildProcess.run(["secret"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-strong-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let port = try freeLoopbackPort()
        let serve = try ChildProcess(["serve", "--port", String(port)], environment: Self.base.merging(Self.sharedSignals) { $1 }.merging([
            "ECHORELAY_DATABASE_URL": "sqlite:" + folder.appendingPathComponent("echorelay.sqlite").path,
            "ECHORELAY_ADMIN_TOKEN": printed, "ECHORELAY_SET_PUSH_TOKEN": printed, "ECHORELAY_INGEST_SECRETS": printed,
        ]) { $1 })
        try await serve.waitUntilAnswering(HTTPTestClient(port: port))
        serve.signal(SIGTERM)
        #expect(try await serve.wait(timeout: .seconds(15)) == 0)
        #expect(!serve.standardError.contains("weaker than 128 bits"), "\(serve.standardError)")
    }
}
