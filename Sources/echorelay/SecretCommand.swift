import ArgumentParser
import EchoRelayCore

struct SecretCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret",
        abstract: "Print a new random whsec_ signing secret (for ECHORELAY_INGEST_SECRETS)."
    )

    func run() {
        print(WebhookSecret.generate())
    }
}
