import EchoRelayCore
import EchoRelaySQLite
import Foundation
import Logging

/// The embedded store's first run: with no ingest secret and no admin token configured,
/// `serve` makes them once, keeps them in the store, and prints them with an example, so a
/// newcomer can start with one command. Later runs reuse the stored ingest secret; the admin
/// token is stored hashed, like any token, so it is shown only when made.
struct FirstRun {
    static let ingestSecretKey = "ingest_secret"
    static let adminTokenKey = "first_run_admin_token_id"

    var ingestSecrets: [WebhookSecret]
    /// Set only on the run that made it: the only time it is shown.
    var newIngestSecret: String?
    var newAdminToken: Secret?

    static func prepare(
        store: SQLiteEventStore, ingestSecrets configured: [WebhookSecret], adminToken: Secret?, logger: Logger
    ) async throws -> FirstRun {
        var result = FirstRun(ingestSecrets: configured)
        if configured.isEmpty {
            let made = WebhookSecret.generate()
            let stored = try await store.insertSettingIfAbsent(ingestSecretKey, value: made)
            if stored == made { result.newIngestSecret = made }
            result.ingestSecrets = [try WebhookSecret(stored)]
            logger.info("using the ingest secret kept in the embedded store (ECHORELAY_INGEST_SECRETS is not set)")
        }
        if adminToken == nil, try await store.setting(adminTokenKey) == nil {
            let (record, token) = try await store.createAccessToken(name: "first-run admin", role: .admin)
            let stored = try await store.insertSettingIfAbsent(adminTokenKey, value: record.id)
            if stored == record.id {
                result.newAdminToken = token
                try await store.recordAudit(actor: Principal(tokenID: nil, name: "first run", role: .admin), action: "token.create",
                                            target: record.id, filter: nil, matched: nil, reason: "made on the embedded store's first run")
            } else {
                _ = try await store.revokeAccessToken(id: record.id)  // another start won the race
            }
        }
        return result
    }

    /// Prints what was made, once, on standard output — never to the log.
    func printWelcome(host: String, port: Int) {
        guard newIngestSecret != nil || newAdminToken != nil else { return }
        let url = "http://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(port)"
        var lines = ["", "EchoRelay first run: made these and kept them in the embedded store. They are shown only now."]
        if let newIngestSecret {
            lines += ["", "  Ingest secret (the identity provider signs POST /v1/events with it):", "    export ECHORELAY_INGEST_SECRETS=\(newIngestSecret)"]
        }
        if let newAdminToken {
            lines += ["", "  Admin token (revoke it with `echorelay tokens revoke` once you have your own):",
                      "    export ECHORELAY_URL=\(url)", "    export ECHORELAY_TOKEN=\(newAdminToken.revealed)",
                      "", "  Try it:", "    curl -H \"Authorization: Bearer $ECHORELAY_TOKEN\" $ECHORELAY_URL/v1/subscriptions",
                      "    echorelay demo"]
        }
        lines.append("")
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }
}
