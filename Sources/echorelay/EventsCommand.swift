import ArgumentParser
import EchoRelayAPI
import EchoRelayCore

/// `echorelay events`: what happened to a user's session updates, for support staff, and
/// re-verifying one the provider could not answer for. A client of the HTTP API, like
/// `replay`, `replays`, `dead-letters` and `audit`.
struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "List a user's events or every user's, show one with its deliveries, re-verify an unverifiable one (a client of the API).",
        discussion: """
            Needs a token with the support or admin role in ECHORELAY_TOKEN, and the server in \
            ECHORELAY_URL (default http://127.0.0.1:8080).

            \(ClientHelp.exitStatus)
            """,
        subcommands: [List.self, Show.self, Reverify.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a user's events, or every user's, newest first.",
            discussion: """
                With --user, that user's timeline (newest sequence first); without it, the events \
                of every user, newest received first.

                Types (--type):
                \(EventType.allCases.map { "  \($0.rawValue): \($0.descriptor.summary)" }.joined(separator: "\n"))

                Examples:
                  echorelay events list --user 4815162342 --type phone.changed --since 7d
                  echorelay events list --type account.deactivated --status rejected --since 1h
                  echorelay events list --status unverifiable

                \(ClientHelp.exitStatus)
                """
        )

        @Option(help: ArgumentHelp("The user whose events to list; without it, every user's.", valueName: "user-id"))
        var user: String?

        @Option(help: ArgumentHelp("Only events of this type: \(EventType.namesInProse). Repeatable.", valueName: "type"))
        var type: [String] = []

        @Option(help: ArgumentHelp("Only events with this status: pending, verified, rejected or unverifiable. Repeatable.", valueName: "status"))
        var status: [String] = []

        @Option(help: ArgumentHelp("Only events decided for this reason, such as unknown_token. Repeatable. Not with --user.", valueName: "reason"))
        var reason: [String] = []

        @Option(help: ArgumentHelp("Only events with a delivery to this subscription. Not with --user.", valueName: "sub_…"))
        var subscription: String?

        @OptionGroup var paging: PageOptions

        @OptionGroup var client: ClientOptions

        func validate() throws {
            if user != nil, !reason.isEmpty || subscription != nil {
                throw ValidationError("--reason and --subscription filter every user's events; leave out --user, or them")
            }
        }

        func run() async throws {
            try await client.run { api in
                var query: [(String, String)] = []
                if !type.isEmpty { query.append(("type", type.joined(separator: ","))) }
                if !status.isEmpty { query.append(("status", status.joined(separator: ","))) }
                if !reason.isEmpty { query.append(("reason", reason.joined(separator: ","))) }
                if let subscription { query.append(("subscription_id", subscription)) }
                let path = user.map { ["v1", "users", $0, "events"] } ?? ["v1", "events"]
                let pages = try await paging.fetch(api, path, filters: query)
                try pages.show(API.TimelineEvent.self, json: client.json, more: "events",
                               none: user.map { "no events for user \($0) match" } ?? "no events match") { events in
                    user == nil ? Self.everyUserTable(events) : Self.table(events)
                }
            }
        }

        static func table(_ events: [API.TimelineEvent]) -> String {
            TextOutput.table(
                ["SEQ", "ID", "TYPE", "STATUS", "RECEIVED", "DELIVERIES"],
                events.map { event in
                    [String(event.sequence), event.id, event.type,
                     event.status + (event.reason.map { " (\($0))" } ?? ""),
                     TextOutput.time(event.received_at), event.deliveries.summary]
                }
            )
        }

        /// Every user's events: the user and the sequence in their own columns.
        static func everyUserTable(_ events: [API.TimelineEvent]) -> String {
            TextOutput.table(
                ["RECEIVED", "USER", "SEQ", "ID", "TYPE", "STATUS", "DELIVERIES"],
                events.map { event in
                    [TextOutput.time(event.received_at), event.user_id, String(event.sequence), event.id, event.type,
                     event.status + (event.reason.map { " (\($0))" } ?? ""), event.deliveries.summary]
                }
            )
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one event: its fields, then each delivery with every attempt.",
            discussion: ClientHelp.exitStatus
        )

        @Argument(help: ArgumentHelp("The event's id, as the identity provider sent it (evt_…).", valueName: "id"))
        var id: String

        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await client.run { api in
                let answer = try await api.get(["v1", "events", id])
                if client.json { return printJSON(answer.body) }
                print(Self.text(try answer.decode(API.Event.self)))
            }
        }

        static func text(_ event: API.Event) -> String {
            var provider = "-"
            if let values = event.provider {
                provider = "user \(TextOutput.orDash(values.user_id)), phone \(TextOutput.orDash(values.phone_number))"
            }
            var sections = [TextOutput.block([
                ("event", event.id), ("type", event.type), ("user", event.user_id), ("sequence", String(event.sequence)),
                ("status", event.status), ("reason", TextOutput.orDash(event.reason)), ("path", event.path),
                ("occurred at", TextOutput.instant(event.occurred_at)), ("received at", TextOutput.instant(event.received_at)),
                ("decided at", TextOutput.instant(event.decided_at)), ("verified at", TextOutput.instant(event.verified_at)),
                ("provider", provider),
            ] + (event.security_event.map { origin in
                [("received as", "SET \(origin.jti) from \(origin.issuer), \(origin.event_type)")]
            } ?? []))]
            if event.deliveries.isEmpty {
                sections.append("no deliveries")
            }
            for (index, delivery) in event.deliveries.enumerated() {
                sections.append(deliveryText(delivery, heading: "delivery \(index + 1) of \(event.deliveries.count)"))
            }
            return sections.joined(separator: "\n\n")
        }

        /// One delivery and its attempts, under `heading`.
        static func deliveryText(_ delivery: API.Delivery, heading: String) -> String {
            var lines = [heading]
            lines.append(TextOutput.block([
                ("subscription", delivery.subscription_id), ("replay", TextOutput.orDash(delivery.replay_id)),
                ("webhook id", delivery.webhook_id), ("status", delivery.status), ("created at", TextOutput.instant(delivery.created_at)),
                ("finished at", TextOutput.instant(delivery.finished_at)),
                ("next try at", TextOutput.instant(delivery.next_attempt_at)),
            ], indent: "  "))
            if delivery.attempts.isEmpty {
                lines.append("  no attempts yet")
            } else {
                lines.append("  attempts:")
                lines.append(TextOutput.table(["#", "STARTED", "TOOK", "HTTP", "RESULT"], delivery.attempts.enumerated().map { number, attempt in
                    [String(number + 1), TextOutput.time(attempt.started_at), "\(attempt.duration_ms)ms",
                     attempt.status_code.map(String.init) ?? "-", attempt.result]
                }, indent: "    "))
            }
            return lines.joined(separator: "\n")
        }
    }
}

// MARK: - Answers

extension API.DeliveryCounts {
    /// "2 of 3 delivered, 1 dead (1 replay)": how many of the event's deliveries arrived,
    /// then the others that are not zero.
    var summary: String {
        guard total > 0 else { return "none" }
        let others = [(pending, "pending"), (dead, "dead"), (cancelled, "cancelled")].filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }
        return (["\(delivered) of \(total) delivered"] + others).joined(separator: ", ")
            + (replays > 0 ? " (\(TextOutput.count(replays, "replay", "replays")))" : "")
    }
}

extension API.DeliveryAttempt {
    /// What went wrong, else the start of the subscriber's answer.
    var result: String {
        if let error_kind {
            return TextOutput.shortened(error_kind + (error.map { ": " + $0 } ?? ""), to: 80)
        }
        return TextOutput.shortened(TextOutput.orDash(response_head), to: 80)
    }
}
