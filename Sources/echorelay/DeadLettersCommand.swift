import ArgumentParser
import EchoRelayAPI
import EchoRelayCore

/// `echorelay dead-letters`: deliveries that used every try without success, and sending
/// them again once the subscriber is fixed. A client of the HTTP API.
struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "List deliveries that failed for good, and redrive them (a client of the API).",
        discussion: "Needs a token with the support or admin role (ECHORELAY_TOKEN). \(ClientHelp.exitStatus)",
        subcommands: [List.self, Redrive.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List dead deliveries, with their last error.",
            discussion: ClientHelp.exitStatus
        )

        @Option(help: ArgumentHelp("Only this subscription's (sub_…).", valueName: "subscription-id"))
        var subscription: String?

        @OptionGroup var paging: PageOptions

        @OptionGroup var client: ClientOptions
        func run() async throws {
            try await client.run { api in
                var query: [(String, String)] = []
                if let subscription { query.append(("subscription_id", subscription)) }
                let pages = try await paging.fetch(api, ["v1", "dead-letters"], filters: query)
                try pages.show(API.DeadLetter.self, json: client.json, more: "dead letters", none: "no dead letters match", Self.table)
            }
        }

        static func table(_ letters: [API.DeadLetter]) -> String {
            TextOutput.table(
                ["DEAD AT", "EVENT", "USER", "TYPE", "SUBSCRIPTION", "TRIES", "LAST ERROR"],
                letters.map { letter in
                    [TextOutput.time(letter.dead_at), letter.event_id, letter.user_id, letter.type, letter.subscription_id,
                     String(letter.attempts), letter.lastErrorText]
                }
            )
        }
    }

    struct Redrive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send dead deliveries again, each with a fresh set of tries.",
            discussion: """
                Example, once a subscriber is fixed:
                  echorelay dead-letters redrive --subscription sub_… --since 1d --reason "backend fixed" --dry-run

                \(ClientHelp.exitStatus)
                """
        )

        @Option(help: "Why: required, and kept in the audit log with who did it.")
        var reason: String?

        @Option(help: ArgumentHelp("Only this subscription's dead letters (sub_…).", valueName: "subscription-id"))
        var subscription: String?

        @Option(help: ArgumentHelp("Only events received at or after this time: \(TimeArgument.help).", valueName: "time"))
        var since: String?

        @Option(help: ArgumentHelp("Only events received before this time: \(TimeArgument.help).", valueName: "time"))
        var until: String?

        @Flag(help: "Count the dead letters that match and send nothing.")
        var dryRun = false

        @OptionGroup var client: ClientOptions

        func validate() throws {
            try Reason.validate(reason, doing: "redrive them")
            try TimeArgument.validate(since, flag: "--since")
            try TimeArgument.validate(until, flag: "--until")
        }

        func run() async throws {
            try await client.run { api in
                let answer = try await api.post(["v1", "dead-letters", "redrive"], body: API.RedriveRequest(
                    reason: reason ?? "", subscription_id: subscription, since: TimeArgument.value(since),
                    until: TimeArgument.value(until), dry_run: dryRun ? true : nil
                ))
                if client.json { return printJSON(answer.body) }
                let matched = try answer.decode(API.DryRunCount.self).matched
                if dryRun {
                    print("dry run: \(TextOutput.count(matched, "dead letter matches", "dead letters match")); nothing was sent")
                } else {
                    print("redriving \(TextOutput.count(matched, "dead letter", "dead letters")): each is sent again with a fresh set of tries")
                }
            }
        }
    }
}

extension API.DeadLetter {
    /// The last error, with the status code unless it already names it, shortened for a table.
    var lastErrorText: String {
        var text = last_error ?? "-"
        if let code = last_status_code.map(String.init), !text.contains(code) {
            text = last_error.map { "HTTP \(code): \($0)" } ?? "HTTP \(code)"
        }
        return TextOutput.shortened(text, to: 60)
    }
}
