import ArgumentParser
import EchoRelayAPI
import EchoRelayCore

/// `echorelay sets`: the Security Event Tokens a Shared Signals transmitter pushed, and what
/// each became. A client of the HTTP API, for support staff.
struct SetsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sets",
        abstract: "List the Security Event Tokens received at POST /v1/sets, newest first, and what each became (a client of the API).",
        discussion: """
            Example:
              echorelay sets --disposition unmatched

            What a SET became: event (an event of its user; `echorelay events show <event>` shows \
            it), verification (the transmitter's verification event, with its state), ignored (an \
            event type EchoRelay does not relay) or unmatched (an update whose subject names no \
            user EchoRelay knows; the note says why). --json prints each SET's subject too.

            Needs a token with the admin or support role (ECHORELAY_TOKEN). \(ClientHelp.exitStatus)
            """
    )

    @Option(help: ArgumentHelp("Only SETs that became this: event, verification, ignored or unmatched.", valueName: "disposition"))
    var disposition: String?

    @OptionGroup var paging: PagingOptions

    @OptionGroup var client: ClientOptions

    func validate() throws {
        if let disposition, SecurityEventDisposition(rawValue: disposition) == nil {
            throw ValidationError("--disposition must be event, verification, ignored or unmatched, got \"\(disposition)\"")
        }
    }

    func run() async throws {
        try await client.run { api in
            var query: [(String, String)] = []
            if let disposition { query.append(("disposition", disposition)) }
            let pages = try await paging.fetch(api, ["v1", "sets"], filters: query)
            try pages.show(API.SecurityEvent.self, json: client.json, more: "SETs",
                           none: "no SETs received" + (disposition.map { " that became \($0)" } ?? ""), Self.table)
        }
    }

    static func table(_ received: [API.SecurityEvent]) -> String {
        TextOutput.table(
            ["RECEIVED", "JTI", "EVENT TYPE", "BECAME", "DETAIL"],
            received.map { set in
                let detail = switch set.disposition {
                case "event": set.event_id ?? "- (the event was deleted)"
                case "verification": "state " + TextOutput.orDash(set.verification_state)
                default: TextOutput.orDash(set.note)
                }
                // The event type's last path segment names it; --json has the whole URI.
                let type = set.event_type.split(separator: "/").last.map(String.init) ?? set.event_type
                return [TextOutput.time(set.received_at), TextOutput.shortened(set.jti, to: 40), type, set.disposition, detail]
            }
        )
    }
}

