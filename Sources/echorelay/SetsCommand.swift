import ArgumentParser
import EchoRelayAPI
import EchoRelayCore

/// `echorelay sets`: the Security Event Tokens a Shared Signals transmitter sent, and what
/// each became (`sets list`, the default), and the stream registered with it (`sets stream`).
/// A client of the HTTP API.
struct SetsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sets",
        abstract: "The Security Event Tokens received from the Shared Signals transmitter, and its stream (a client of the API).",
        subcommands: [List.self, SetsStreamCommand.self],
        defaultSubcommand: List.self
    )
}

extension SetsCommand {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the Security Event Tokens received (pushed to POST /v1/sets or polled), newest first, and what each became.",
            discussion: """
                Example:
                  echorelay sets --disposition unmatched

                What a SET became: event (an event of its user; `echorelay events show <event>` shows \
                it), verification (the transmitter's verification event, with its state), noted (recorded \
                for support, not delivered: RISC account-enabled and credential-change-required), ignored \
                (an event type EchoRelay does not relay), unmatched (an update whose subject names no \
                user EchoRelay knows; the note says why) or refused (a polled SET that failed a check; the \
                note has the error code reported to the transmitter). --json prints each SET's subject too.

                Needs a token with the admin or support role (ECHORELAY_TOKEN). \(ClientHelp.exitStatus)
                """
        )

        @Option(help: ArgumentHelp("Only SETs that became this: event, verification, noted, ignored, unmatched or refused.", valueName: "disposition"))
        var disposition: String?

        @OptionGroup var paging: PagingOptions

        @OptionGroup var client: ClientOptions

        func validate() throws {
            if let disposition, SecurityEventDisposition(rawValue: disposition) == nil {
                throw ValidationError("--disposition must be event, verification, noted, ignored, unmatched or refused, got \"\(disposition)\"")
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
                    return [TextOutput.time(set.received_at), TextOutput.shortened(set.jti, to: 40), TextOutput.orDash(type.isEmpty ? nil : type),
                            set.disposition, detail]
                }
            )
        }
    }
}
