import ArgumentParser
import EchoRelayCore
import Foundation

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
                if client.json { return printJSON(try pages.json(listKey: "events")) }

                let events = try pages.items(EventPage.self, \.events)
                if let user {
                    print(events.isEmpty ? "no events for user \(user) match" : Self.table(events))
                } else {
                    print(events.isEmpty ? "no events match" : Self.everyUserTable(events))
                }
                pages.hintMore("events")
            }
        }

        static func table(_ events: [EventSummary]) -> String {
            TextOutput.table(
                ["SEQ", "ID", "TYPE", "STATUS", "RECEIVED", "DELIVERIES"],
                events.map { event in
                    [String(event.sequence), event.id, event.type,
                     event.status + (event.reason.map { " (\($0))" } ?? ""),
                     TextOutput.time(event.receivedAt), event.deliveries?.summary ?? "-"]
                }
            )
        }

        /// Every user's events: the user and the sequence in their own columns.
        static func everyUserTable(_ events: [EventSummary]) -> String {
            TextOutput.table(
                ["RECEIVED", "USER", "SEQ", "ID", "TYPE", "STATUS", "DELIVERIES"],
                events.map { event in
                    [TextOutput.time(event.receivedAt), event.userID ?? "-", String(event.sequence), event.id, event.type,
                     event.status + (event.reason.map { " (\($0))" } ?? ""), event.deliveries?.summary ?? "-"]
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
                print(Self.text(try answer.decode(EventDetail.self)))
            }
        }

        static func text(_ event: EventDetail) -> String {
            var provider = "-"
            if let values = event.provider {
                provider = "user \(TextOutput.orDash(values.userID)), phone \(TextOutput.orDash(values.phoneNumber))"
            }
            var sections = [TextOutput.block([
                ("event", event.id), ("type", event.type), ("user", event.userID), ("sequence", String(event.sequence)),
                ("status", event.status), ("reason", TextOutput.orDash(event.reason)),
                ("occurred at", event.occurredAt), ("received at", event.receivedAt),
                ("decided at", TextOutput.orDash(event.decidedAt)), ("verified at", TextOutput.orDash(event.verifiedAt)),
                ("provider", provider),
            ] + (event.securityEvent.map { origin in
                [("received as", "SET \(origin.jti) from \(origin.issuer), \(origin.eventType)")]
            } ?? []))]
            if event.deliveries.isEmpty {
                sections.append("no deliveries")
            }
            for (index, delivery) in event.deliveries.enumerated() {
                var lines = ["delivery \(index + 1) of \(event.deliveries.count)"]
                lines.append(TextOutput.block([
                    ("subscription", delivery.subscriptionID), ("replay", TextOutput.orDash(delivery.replayID)),
                    ("webhook id", delivery.webhookID), ("status", delivery.status), ("created at", delivery.createdAt),
                    ("finished at", TextOutput.orDash(delivery.finishedAt)),
                    ("next try at", TextOutput.orDash(delivery.nextAttemptAt)),
                ], indent: "  "))
                if delivery.attempts.isEmpty {
                    lines.append("  no attempts yet")
                } else {
                    lines.append("  attempts:")
                    lines.append(TextOutput.table(["#", "STARTED", "TOOK", "HTTP", "RESULT"], delivery.attempts.enumerated().map { number, attempt in
                        [String(number + 1), TextOutput.time(attempt.startedAt), "\(attempt.durationMS)ms",
                         attempt.statusCode.map(String.init) ?? "-", attempt.result]
                    }, indent: "    "))
                }
                sections.append(lines.joined(separator: "\n"))
            }
            return sections.joined(separator: "\n\n")
        }
    }
}

// MARK: - Answers

/// `GET /v1/users/{user_id}/events` and `GET /v1/events`.
struct EventPage: Decodable {
    let events: [EventSummary]
}

/// One event in a list, with counts of its deliveries.
struct EventSummary: Decodable {
    let id: String
    let type: String
    let userID: String?
    let sequence: Int64
    let status: String
    let reason: String?
    let receivedAt: String
    let deliveries: DeliveryCounts?

    enum CodingKeys: String, CodingKey {
        case id, type, sequence, status, reason, deliveries
        case userID = "user_id"
        case receivedAt = "received_at"
    }
}

struct DeliveryCounts: Decodable {
    let total: Int
    let pending: Int
    let delivered: Int
    let dead: Int
    let cancelled: Int
    let replays: Int

    /// "3: 2 delivered, 1 dead (1 replay)", naming only the counts that are not zero.
    var summary: String {
        guard total > 0 else { return "none" }
        let parts = [(delivered, "delivered"), (pending, "pending"), (dead, "dead"), (cancelled, "cancelled")]
            .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }
        return "\(total): " + parts.joined(separator: ", ") + (replays > 0 ? " (\(TextOutput.count(replays, "replay", "replays")))" : "")
    }
}

/// `GET /v1/events/{id}`.
struct EventDetail: Decodable {
    struct Provider: Decodable {
        let userID: String?
        let phoneNumber: String?

        enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case phoneNumber = "phone_number"
        }
    }

    struct Delivery: Decodable {
        let subscriptionID: String
        let replayID: String?
        let webhookID: String
        let status: String
        let createdAt: String
        let finishedAt: String?
        let nextAttemptAt: String?
        let attempts: [Attempt]

        enum CodingKeys: String, CodingKey {
            case status, attempts
            case subscriptionID = "subscription_id"
            case replayID = "replay_id"
            case webhookID = "webhook_id"
            case createdAt = "created_at"
            case finishedAt = "finished_at"
            case nextAttemptAt = "next_attempt_at"
        }
    }

    struct Attempt: Decodable {
        let startedAt: String
        let durationMS: Int
        let statusCode: Int?
        let errorKind: String?
        let error: String?
        let responseHead: String?

        enum CodingKeys: String, CodingKey {
            case error
            case startedAt = "started_at"
            case durationMS = "duration_ms"
            case statusCode = "status_code"
            case errorKind = "error_kind"
            case responseHead = "response_head"
        }

        /// What went wrong, else the start of the subscriber's answer.
        var result: String {
            if let errorKind {
                return TextOutput.shortened(errorKind + (error.map { ": " + $0 } ?? ""), to: 80)
            }
            return TextOutput.shortened(TextOutput.orDash(responseHead), to: 80)
        }
    }

    let id: String
    let type: String
    let userID: String
    let sequence: Int64
    let status: String
    let reason: String?
    let occurredAt: String
    let receivedAt: String
    let decidedAt: String?
    let verifiedAt: String?
    let provider: Provider?
    let securityEvent: SecurityEventOrigin?
    let deliveries: [Delivery]

    /// The Security Event Token the event came as (`source` `set`).
    struct SecurityEventOrigin: Decodable {
        let issuer: String
        let jti: String
        let eventType: String

        enum CodingKeys: String, CodingKey {
            case issuer, jti
            case eventType = "event_type"
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, type, sequence, status, reason, provider, deliveries
        case securityEvent = "security_event"
        case userID = "user_id"
        case occurredAt = "occurred_at"
        case receivedAt = "received_at"
        case decidedAt = "decided_at"
        case verifiedAt = "verified_at"
    }
}
