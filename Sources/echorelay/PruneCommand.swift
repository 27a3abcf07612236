import ArgumentParser
import EchoRelayCore
import EchoRelayServer

/// `echorelay prune`: what the worker processes' background pruning does, now, by hand.
struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Remove what retention no longer keeps (ECHORELAY_RETAIN_*); --dry-run only counts it.",
        discussion: """
            Worker processes prune by themselves every ECHORELAY_PRUNE_INTERVAL; this runs the same \
            walk once, in small batches, and prints what it removed. An event whose retention has \
            passed keeps its receipt (id, fingerprint, user, sequence, type, outcome and times): the \
            same event id pushed again still gets its stored answer.

            Exit status: 0 done; 1 the database could not be reached or refused; 64 a usage error.
            """
    )

    @OptionGroup var database: DatabaseOption

    @OptionGroup var retention: RetentionOptions

    @Flag(help: "Count what would be removed now, and remove nothing.")
    var dryRun = false

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = try logging.bootstrap(label: "echorelay.prune")
        let policy = try retention.policy()
        guard !policy.keepsEverything else { return print("retention keeps everything (both settings are 0): nothing to prune") }
        let removed = try await database.location().withStore(logger: logger) { opened in
            let pending = try await opened.pendingMigrations()
            guard pending.isEmpty else { throw NotMigrated(pending: pending) }
            return try await Pruning(store: opened.store, policy: policy, pause: .zero).run(dryRun: dryRun)
        }
        print(TextOutput.block([
            ("events cut to their receipt", String(removed.events)), ("deliveries", String(removed.deliveries)),
            ("attempt records", String(removed.attempts)), ("test deliveries", String(removed.testDeliveries)),
        ]))
        if dryRun { print("dry run: nothing was removed") }
    }
}

/// A database that `serve` would migrate first: pruning it would meet tables that are not there
/// (or not yet as they should be).
struct NotMigrated: Error, CustomStringConvertible {
    let pending: [Int]
    var description: String {
        "the database has migrations pending (\(pending.map(String.init).joined(separator: ", "))): run `echorelay migrate` first"
    }
}

/// `ECHORELAY_RETAIN_ATTEMPTS` and `ECHORELAY_RETAIN_EVENTS`, for `serve` and `prune`.
struct RetentionOptions: ParsableArguments {
    @Option(name: .customLong(ServeSettings.retainAttempts.flag), help: ServeSettings.retainAttempts.argumentHelp)
    var retainAttempts: String?

    @Option(name: .customLong(ServeSettings.retainEvents.flag), help: ServeSettings.retainEvents.argumentHelp)
    var retainEvents: String?

    func policy() throws -> RetentionPolicy {
        RetentionPolicy(attempts: try Self.keep(retainAttempts, ServeSettings.retainAttempts),
                        events: try Self.keep(retainEvents, ServeSettings.retainEvents))
    }

    /// A duration, or nil for `0`: kept forever.
    private static func keep(_ flag: String?, _ setting: ServeSetting) throws -> Duration? {
        let duration = try Setting.parsed(setting, flag, must: "a duration such as 30d or 12h, or 0 to keep forever", DurationText.parse)
        return duration == .zero ? nil : duration
    }
}
