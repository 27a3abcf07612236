import ArgumentParser
import EchoRelayAPI
import EchoRelayCore

/// `echorelay replay`: sends events to subscribers again, on purpose — one event by id, or
/// every delivery that matches a filter (bulk). A client of the HTTP API.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Send one event, or every delivery matching a filter, to its subscribers again.",
        discussion: """
            One event:  echorelay replay evt_01HZX3 --reason "backend restored from backup"
            Bulk:       echorelay replay --user 4815162342 --since 2d --reason "…" --dry-run

            A replay carries the original webhook-id, so subscribers that deduplicate see it as the \
            same message. Only verified events are delivered, so only they are replayed. Without an id \
            at least one filter is needed, so that nothing replays every event by accident; --dry-run \
            counts the deliveries that match and sends nothing. Follow a replay with \
            `echorelay replays show ID --wait`.

            Needs a token with the support or admin role (ECHORELAY_TOKEN). \(ClientHelp.exitStatus)
            """
    )

    @Argument(help: ArgumentHelp("The event to replay. Leave it out for a bulk replay by filters.", valueName: "id"))
    var id: String?

    @Option(help: "Why: required, and kept in the audit log with who did it.")
    var reason: String?

    @Option(help: ArgumentHelp("Only to this subscription (sub_…). Repeatable with an event id; once in a bulk replay.", valueName: "subscription-id"))
    var subscription: [String] = []

    @Option(help: ArgumentHelp("Bulk: only this user's events.", valueName: "user-id"))
    var user: String?

    @Option(help: ArgumentHelp("Bulk: only events of this type. Repeatable.", valueName: "type"))
    var type: [String] = []

    @Option(help: ArgumentHelp("Bulk: only events received at or after this time: \(TimeArgument.help).", valueName: "time"))
    var since: String?

    @Option(help: ArgumentHelp("Bulk: only events received before this time: \(TimeArgument.help).", valueName: "time"))
    var until: String?

    @Option(help: ArgumentHelp("Bulk: only deliveries now in this state: pending, delivered, dead or cancelled.", valueName: "status"))
    var status: String?

    @Flag(help: "Bulk: count the deliveries that match and send nothing.")
    var dryRun = false

    @OptionGroup var client: ClientOptions

    /// Whether any bulk-only option was given.
    var hasBulkFilters: Bool {
        user != nil || !type.isEmpty || since != nil || until != nil || status != nil || dryRun
    }

    func validate() throws {
        if id != nil, hasBulkFilters {
            throw ValidationError("give either an event id or bulk filters (--user, --type, --since, --until, --status, --dry-run), not both")
        }
        if id == nil {
            guard hasBulkFilters || !subscription.isEmpty else {
                throw ValidationError("give an event id, or filters for a bulk replay (--user, --subscription, --type, --since, --until, --status)")
            }
            guard subscription.count <= 1 else {
                throw ValidationError("a bulk replay takes one --subscription at most")
            }
        }
        try Reason.validate(reason, doing: "replay")
        try TimeArgument.validate(since, flag: "--since")
        try TimeArgument.validate(until, flag: "--until")
    }

    func run() async throws {
        try await client.run { api in
            if let id {
                try await replayEvent(id, api)
            } else {
                try await replayInBulk(api)
            }
        }
    }

    private func replayEvent(_ id: String, _ api: APIClient) async throws {
        let answer: APIAnswer
        do throws(ClientError) {
            answer = try await api.post(
                ["v1", "events", id, "replay"],
                body: API.ReplayEventRequest(reason: reason ?? "", subscription_ids: subscription.isEmpty ? nil : subscription)
            )
        } catch {
            var error = error
            if error.status == 422, subscription.isEmpty {
                // No subscription wants it any more: say where to find one (the demo deletes its own).
                error.hint = "list the subscriptions with: echorelay subscriptions list, then name one with --subscription sub_… (echorelay demo deletes its own subscription when it ends)"
            }
            throw error
        }
        if client.json { return printJSON(answer.body) }
        let receipt = try answer.decode(API.ReplayReceipt.self)
        print(TextOutput.block([
            ("replay", receipt.id), ("event", receipt.event_id),
            ("deliveries", String(receipt.matched)),
            ("subscriptions", receipt.subscription_ids.isEmpty ? "-" : receipt.subscription_ids.joined(separator: ", ")),
        ]))
        print("follow it with: echorelay replays show \(receipt.id) --wait")
    }

    private func replayInBulk(_ api: APIClient) async throws {
        let answer = try await api.post(["v1", "replays"], body: API.BulkReplayRequest(
            reason: reason ?? "", user_id: user, subscription_id: subscription.first, types: type.isEmpty ? nil : type,
            since: TimeArgument.value(since), until: TimeArgument.value(until), status: status, dry_run: dryRun ? true : nil
        ))
        if client.json { return printJSON(answer.body) }
        if dryRun {
            let count = try answer.decode(API.DryRunCount.self)
            print("dry run: \(TextOutput.count(count.matched, "delivery matches", "deliveries match")); nothing was sent")
            return
        }
        let replay = try answer.decode(API.Replay.self)
        print(replay.text)
        print("follow it with: echorelay replays show \(replay.id) --wait")
    }
}
