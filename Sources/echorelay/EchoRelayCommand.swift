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
        subcommands: [
            ServeCommand.self, MigrateCommand.self, TokensCommand.self, SecretCommand.self, SecretKeyCommand.self,
            ResealCommand.self, PruneCommand.self, EchoSignCommand.self,
            // Clients of the HTTP API, for support staff and administrators (ECHORELAY_URL, ECHORELAY_TOKEN).
            EventsCommand.self, DeliveriesCommand.self, ReplayCommand.self, ReplaysCommand.self, DeadLettersCommand.self, AuditCommand.self, SetsCommand.self,
            SubscriptionsCommand.self,
            // A tour of the whole pipeline against `serve --demo`.
            DemoCommand.self,
        ]
    )
}

