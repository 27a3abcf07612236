import ArgumentParser
import EchoRelayCore

@main
struct EchoRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echorelay",
        abstract: "Relays session updates from an identity provider to app backends, re-verified with OAuth Echo.",
        discussion: """
            Every option can also be set with the ECHORELAY_* environment variable named in its help; \
            a flag wins over the environment. Prefer the environment for secrets: flags are visible to \
            other users of the machine.
            """,
        version: EchoRelayInfo.version,
        subcommands: [ServeCommand.self, MigrateCommand.self, TokensCommand.self, SecretCommand.self, EchoSignCommand.self]
    )
}

