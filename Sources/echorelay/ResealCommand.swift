import ArgumentParser
import EchoRelayCore

/// `echorelay secret-key`: a new key for ECHORELAY_SECRET_KEY.
struct SecretKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret-key",
        abstract: "Print a new random key for ECHORELAY_SECRET_KEY (base64 of 32 bytes, AES-256).",
        discussion: """
            It encrypts subscription signing secrets in the database. Keep it apart from the database \
            and its backups; without it, sealed secrets cannot be read. Rotation: see `echorelay reseal --help`.
            """
    )

    func run() {
        print(SecretSealer.generateKey())
    }
}

/// `echorelay reseal`: seals every subscription secret with the first key of
/// ECHORELAY_SECRET_KEY. Like `tokens`, it works on the database directly.
struct ResealCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reseal",
        abstract: "Encrypt every subscription secret with the first key of ECHORELAY_SECRET_KEY (works on the database directly).",
        discussion: """
            Secrets in plaintext are encrypted, and secrets sealed with another listed key are decrypted and \
            sealed again, all in one transaction: if one cannot be opened (its key is not listed), nothing \
            changes. Running it again changes nothing.

            To rotate the key:
              1. make a new key: echorelay secret-key
              2. set ECHORELAY_SECRET_KEY=<new>,<old> (new first); restart every serve
              3. run: echorelay reseal   (with the same ECHORELAY_SECRET_KEY)
              4. set ECHORELAY_SECRET_KEY=<new> and restart again
            To start encrypting a database written without a key: set the key, restart, run reseal.
            """
    )

    @Option(help: "Comma-separated base64 keys, the sealing one first. (env: ECHORELAY_SECRET_KEY, required)")
    var secretKey: String?

    @OptionGroup var database: TokenDatabaseOptions

    func run() async throws {
        guard let text = Setting.value(secretKey, "ECHORELAY_SECRET_KEY") else {
            throw TokensCommandError("ECHORELAY_SECRET_KEY is not set: there is no key to seal with (make one with: echorelay secret-key)")
        }
        let sealer: SecretSealer
        do throws(SecretSealerError) {
            sealer = try SecretSealer(keys: text)
        } catch {
            throw TokensCommandError(error.description)
        }
        let changed: Int
        do {
            changed = try await database.withStore(sealer: sealer) { store in
                let changed = try await store.resealSubscriptionSecrets()
                try await store.recordAudit(actor: .commandLine, action: "subscription.reseal", target: sealer.sealingKeyID,
                                            filter: nil, matched: changed, reason: nil)
                return changed
            }
        } catch let error as SecretSealerError {
            throw TokensCommandError("\(error.description); nothing was changed")
        }
        print("resealed \(TextOutput.count(changed, "subscription", "subscriptions")) with key \(sealer.sealingKeyID)")
    }
}
