import EchoRelayCore
import EchoRelaySQLite
import Foundation
import Logging

/// The embedded store's first run: with no ingest secret and no admin token configured,
/// `serve` makes them, keeps them in the store, and prints them with an example, so a
/// newcomer can start with one command. Later runs reuse the stored ingest secret.
///
/// Nothing is printed until the server listens: a run that cannot bind (a port in use) shows
/// nothing, and the next run shows the secret then. The admin token is stored hashed, like any
/// token, so it is made only once the server listens, and shown that once.
struct FirstRun {
    static let ingestSecretKey = "ingest_secret"
    static let adminTokenKey = "first_run_admin_token_id"
    /// Set once a listening run has shown the welcome.
    static let welcomeShownKey = "first_run_welcome_shown"

    let store: SQLiteEventStore
    var ingestSecrets: [WebhookSecret]
    /// The stored ingest secret, while no listening run has shown it yet.
    var unshownIngestSecret: String?
    /// Whether an admin token is to be made once the server listens.
    var makesAdminToken: Bool

    static func prepare(
        store: SQLiteEventStore, ingestSecrets configured: [WebhookSecret], adminToken: Secret?, logger: Logger
    ) async throws -> FirstRun {
        var result = FirstRun(store: store, ingestSecrets: configured, unshownIngestSecret: nil, makesAdminToken: false)
        // An install from before the marker showed its welcome when it made its admin token.
        let shown = try await store.setting(welcomeShownKey) != nil
        let adminTokenMade = try await store.setting(adminTokenKey) != nil
        if configured.isEmpty {
            let stored = try await store.insertSettingIfAbsent(ingestSecretKey, value: WebhookSecret.generate())
            if !shown, !adminTokenMade { result.unshownIngestSecret = stored }
            result.ingestSecrets = [try WebhookSecret(stored)]
            logger.info("using the ingest secret kept in the embedded store (ECHORELAY_INGEST_SECRETS is not set)")
        }
        result.makesAdminToken = adminToken == nil && !adminTokenMade
        return result
    }

    /// Once the server listens: makes the admin token if one is due, and prints what was made
    /// on standard output — never to the log — with the console's address.
    func welcome(url: String, command: String) async throws {
        var adminToken: Secret?
        if makesAdminToken {
            let (record, token) = try await store.createAccessToken(name: "first-run admin", role: .admin)
            if try await store.insertSettingIfAbsent(Self.adminTokenKey, value: record.id) == record.id {
                adminToken = token
                try await store.recordAudit(actor: Principal(tokenID: nil, name: "first run", role: .admin), action: "token.create",
                                            target: record.id, filter: nil, matched: nil, reason: "made on the embedded store's first run")
            } else {
                _ = try await store.revokeAccessToken(id: record.id)
            }
        }
        guard unshownIngestSecret != nil || adminToken != nil else { return }
        FileHandle.standardOutput.write(Data(Self.text(url: url, command: command, ingestSecret: unshownIngestSecret,
                                                       adminToken: adminToken).utf8))
        _ = try await store.insertSettingIfAbsent(Self.welcomeShownKey, value: "1")
    }

    static func text(url: String, command: String, ingestSecret: String?, adminToken: Secret?) -> String {
        var lines = ["", "EchoRelay first run: made these and kept them in the embedded store. They are shown only now."]
        if let ingestSecret {
            lines += ["", "  Ingest secret (the identity provider signs POST /v1/events with it):", "    export ECHORELAY_INGEST_SECRETS=\(ingestSecret)"]
        }
        if let adminToken {
            lines += ["", "  Admin token (revoke it with `\(command) tokens revoke` once you have your own):",
                      "    export ECHORELAY_URL=\(url)", "    export ECHORELAY_TOKEN=\(adminToken.revealed)",
                      "", "  Try it, in another terminal, with the lines above pasted:",
                      "    \(command) demo",
                      "    curl -H \"Authorization: Bearer $ECHORELAY_TOKEN\" $ECHORELAY_URL/v1/subscriptions",
                      "", "  The console: \(url)/console (sign in with the admin token)"]
        }
        lines.append("")
        return lines.joined(separator: "\n") + "\n"
    }
}
