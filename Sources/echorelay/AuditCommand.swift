import ArgumentParser
import EchoRelayAPI
import EchoRelayCore

/// `echorelay audit`: who changed what, when and why — every replay, re-verification,
/// redrive, subscription and token change. A client of the HTTP API, for administrators.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "List the audit log, newest first: who did what, to which target, and why (a client of the API).",
        discussion: """
            Example:
              echorelay audit --action event.replay --since 7d

            Actions: event.replay, event.reverify, replay.start, replay.cancel, dead_letters.redrive, \
            subscription.create, .update, .delete, .enable, .disable, .rotate_secret, .reseal, token.create, \
            token.revoke. The table shortens long reasons; --json prints them whole, with each \
            entry's filter and the actor's token id.

            Needs a token with the admin role (ECHORELAY_TOKEN): a support token is refused. \
            \(ClientHelp.exitStatus)
            """
    )

    @Option(help: ArgumentHelp("Only entries of this action, such as event.replay or replay.cancel.", valueName: "action"))
    var action: String?

    @Option(help: ArgumentHelp("Only entries by the token with this name, such as \"Sam from support\".", valueName: "name"))
    var actor: String?

    @Option(help: ArgumentHelp("Only entries about this target: an event, replay, subscription or token id.", valueName: "id"))
    var target: String?

    @OptionGroup var paging: PageOptions

    @OptionGroup var client: ClientOptions

    /// The table's reasons are cut here; --json keeps them whole.
    static let reasonWidth = 60
    func run() async throws {
        try await client.run { api in
            var query: [(String, String)] = []
            if let action { query.append(("action", action)) }
            if let actor { query.append(("actor", actor)) }
            if let target { query.append(("target", target)) }
            let pages: Pages
            do throws(ClientError) {
                pages = try await paging.fetch(api, ["v1", "audit"], filters: query)
            } catch {
                // The shared hint names the support role, which is not enough here.
                guard error.status == 403 else { throw error }
                var refused = error
                refused.hint = "the audit log needs a token with the admin role (ECHORELAY_ADMIN_TOKEN, or echorelay tokens create --role admin)"
                throw refused
            }
            try pages.show(API.AuditEntry.self, json: client.json, more: "entries", none: "no audit entries match", Self.table)
        }
    }

    static func table(_ entries: [API.AuditEntry]) -> String {
        TextOutput.table(
            ["TIME", "ACTOR", "ACTION", "TARGET", "MATCHED", "REASON"],
            entries.map { entry in
                [TextOutput.time(entry.at), "\(entry.actor.name) (\(entry.actor.role))", entry.action,
                 TextOutput.orDash(entry.target), entry.matched.map(String.init) ?? "-",
                 TextOutput.shortened(TextOutput.orDash(entry.reason), to: reasonWidth)]
            }
        )
    }
}

