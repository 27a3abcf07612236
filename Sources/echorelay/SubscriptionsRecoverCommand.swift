import ArgumentParser
import EchoRelayAPI
import EchoRelayCore

extension SubscriptionsCommand {
    /// `echorelay subscriptions recover`: what a subscription missed, sent again.
    struct Recover: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a subscription the verified events it never received since a time.",
            discussion: """
                Example, after an outage of the endpoint:
                  echorelay subscriptions recover sub_… --since 2d --dry-run
                  echorelay subscriptions recover sub_… --since 2d --wait

                Sends every verified event of the subscription's types received in the window that it \
                has neither received nor still has pending: those dead-lettered, and those verified while \
                it was disabled. The window starts no earlier than the subscription's creation, unless staff \
                add --before-creation (audited). Each once, with its webhook-id, in each user's order; a disabled \
                subscription's wait until it is enabled. --dry-run counts them and sends nothing; --wait follows the recover \
                (a replay of kind recover) as `echorelay replays show --wait` does, with its exit status 3.

                \(ClientHelp.exitStatus)
                """
        )

        @Argument(help: ArgumentHelp("The subscription (sub_…).", valueName: "subscription-id"))
        var id: String

        @Option(help: ArgumentHelp("From events received at this time: \(TimeArgument.help). Required.", valueName: "time"))
        var since: String

        @Option(help: ArgumentHelp("Up to events received before this time (default now): \(TimeArgument.help).", valueName: "time"))
        var until: String?

        @Option(help: "Why, for the audit log (optional).")
        var reason: String?

        @Flag(help: "Staff only: also send events received before the subscription was created (audited).")
        var beforeCreation = false

        @Flag(help: "Count the events it would send, and send nothing.")
        var dryRun = false

        @Flag(help: "Follow the recover until it ends, showing its progress on standard error.")
        var wait = false

        @OptionGroup var client: ClientOptions

        func validate() throws {
            try TimeArgument.validate(since, flag: "--since")
            try TimeArgument.validate(until, flag: "--until")
            if dryRun, wait { throw ValidationError("--wait follows a recover; a --dry-run starts none") }
        }

        func run() async throws {
            try await client.run { api in
                let answer = try await api.post(["v1", "subscriptions", id, "recover"], body: API.RecoverRequest(
                    reason: reason, since: TimeArgument.value(since)!, until: TimeArgument.value(until), dry_run: dryRun ? true : nil,
                    before_creation: beforeCreation ? true : nil
                ))
                if dryRun {
                    if client.json { return printJSON(answer.body) }
                    let count = try answer.decode(API.DryRunCount.self)
                    return print("dry run: \(TextOutput.count(count.matched, "event", "events")) to recover; nothing was sent")
                }
                let replay = try answer.decode(API.Replay.self)
                if wait { return try await ReplaysCommand.follow(replay.id, api, interval: .seconds(1), json: client.json) }
                if client.json { return printJSON(answer.body) }
                print(replay.text)
                print("follow it with: echorelay replays show \(replay.id) --wait")
            }
        }
    }
}
