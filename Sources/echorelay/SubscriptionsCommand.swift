import ArgumentParser
import EchoRelayAPI
import EchoRelayCore

/// `echorelay subscriptions`: an app backend's subscriptions, their deliveries and a test
/// delivery, from the command line. A client of the HTTP API.
struct SubscriptionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscriptions",
        abstract: "Manage subscriptions, read their deliveries, test and recover them (a client of the API).",
        discussion: """
            An app token (ECHORELAY_TOKEN) sees and changes only the subscriptions it created; admin \
            sees all; support reads deliveries and sends tests. \(ClientHelp.exitStatus)
            """,
        subcommands: [List.self, Show.self, Create.self, Enable.self, Disable.self, RotateSecret.self, Test.self, Recover.self, Deliveries.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List subscriptions.", discussion: ClientHelp.exitStatus)

        @OptionGroup var paging: PagingOptions
        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await client.run { api in
                let pages = try await paging.fetch(api, ["v1", "subscriptions"], filters: [])
                try pages.show(API.Subscription.self, json: client.json, more: "subscriptions", none: "no subscriptions") { subscriptions in
                    TextOutput.table(
                        ["ID", "URL", "TYPES", "ORDERED", "STATE"],
                        subscriptions.map { [$0.id, TextOutput.shortened($0.url, to: 60), $0.event_types.joined(separator: ","),
                                             $0.ordered ? "yes" : "no", $0.stateText] }
                    )
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one subscription and its health.", discussion: ClientHelp.exitStatus)

        @Argument(help: ArgumentHelp("The subscription (sub_…).", valueName: "subscription-id"))
        var id: String

        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await client.run { api in
                let answer = try await api.get(["v1", "subscriptions", id])
                if client.json { return printJSON(answer.body) }
                print(try answer.decode(API.Subscription.self).block)
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a subscription; prints its signing secret, shown only now.",
            discussion: """
                Example:
                  echorelay subscriptions create https://billing.internal/hooks/echorelay --type token.rotated --type account.deactivated

                \(ClientHelp.exitStatus)
                """
        )

        @Argument(help: ArgumentHelp("Where deliveries are POSTed (https).", valueName: "endpoint-url"))
        var endpoint: String

        @Option(name: .customLong("type"), help: ArgumentHelp("An event type it wants; repeat for several (\(EventType.namesInProse)).",
                                                             valueName: "type"))
        var types: [String] = []

        @Option(help: "What it is for, shown to staff.")
        var description: String?

        @Flag(inversion: .prefixedNo, help: "Deliver each user's updates in sequence order.")
        var ordered = true

        @OptionGroup var client: ClientOptions

        func validate() throws {
            guard !types.isEmpty else { throw ValidationError("give at least one --type (\(EventType.namesInProse))") }
            for type in types where EventType(rawValue: type) == nil {
                throw ValidationError("--type \"\(type)\" is not an event type (\(EventType.namesInProse))")
            }
        }

        func run() async throws {
            try await client.run { api in
                let answer = try await api.post(["v1", "subscriptions"], body: API.SubscriptionInput(
                    url: endpoint, event_types: types, description: description, ordered: ordered
                ))
                if client.json { return printJSON(answer.body) }
                let created = try answer.decode(API.Subscription.self)
                print(created.block)
                print("\nsigning secret (shown only now; keep it where your endpoint can read it):\n\(created.secret ?? "-")")
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a subscription: new events are delivered to it again.",
                                                        discussion: ClientHelp.exitStatus)
        @Argument(help: ArgumentHelp("The subscription (sub_…).", valueName: "subscription-id"))
        var id: String
        @OptionGroup var client: ClientOptions

        func run() async throws { try await SubscriptionsCommand.post(client, [id, "enable"]) }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable a subscription: nothing is delivered to it until it is enabled.",
                                                        discussion: ClientHelp.exitStatus)
        @Argument(help: ArgumentHelp("The subscription (sub_…).", valueName: "subscription-id"))
        var id: String
        @OptionGroup var client: ClientOptions

        func run() async throws { try await SubscriptionsCommand.post(client, [id, "disable"]) }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret",
            abstract: "Give a subscription a new signing secret; for 24 hours both sign every delivery.",
            discussion: ClientHelp.exitStatus
        )
        @Argument(help: ArgumentHelp("The subscription (sub_…).", valueName: "subscription-id"))
        var id: String
        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await client.run { api in
                let answer = try await api.post(["v1", "subscriptions", id, "rotate-secret"], body: EmptyBody())
                if client.json { return printJSON(answer.body) }
                let rotated = try answer.decode(API.Subscription.self)
                print("new signing secret (shown only now; the old one also signs for 24 hours):\n\(rotated.secret ?? "-")")
            }
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send the subscription a signed echorelay.test delivery now and show what its endpoint answered.",
            discussion: "Exits with 3 when the endpoint did not answer 2xx. \(ClientHelp.exitStatus)"
        )
        @Argument(help: ArgumentHelp("The subscription (sub_…).", valueName: "subscription-id"))
        var id: String
        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await client.run { api in
                let answer = try await api.post(["v1", "subscriptions", id, "test"], body: EmptyBody())
                let result = try answer.decode(API.TestDeliveryResult.self)
                if client.json { printJSON(answer.body) } else {
                    let attempt = result.attempt
                    print(TextOutput.block([
                        ("delivered", result.delivered ? "yes" : "no"), ("webhook-id", result.webhook_id),
                        ("status", attempt.status_code.map(String.init) ?? "no answer"), ("took", "\(attempt.duration_ms) ms"),
                        ("error", TextOutput.orDash(attempt.error_kind.map { kind in attempt.error.map { "\(kind): \($0)" } ?? kind })),
                        ("answer", TextOutput.shortened(TextOutput.orDash(attempt.response_head), to: 200)),
                    ]))
                }
                if !result.delivered { throw ExitCode(3) }
            }
        }
    }

    struct Deliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a subscription's deliveries, newest first; --attempts shows one delivery's tries.",
            discussion: """
                Example: did we get user 4815162342's deactivation?
                  echorelay subscriptions deliveries sub_… --user 4815162342 --type account.deactivated

                \(ClientHelp.exitStatus)
                """
        )
        @Argument(help: ArgumentHelp("The subscription (sub_…).", valueName: "subscription-id"))
        var id: String

        @Option(help: ArgumentHelp("Only deliveries in this state (\(DeliveryStatus.allCases.map(\.rawValue).joined(separator: ", "))).",
                                   valueName: "status"))
        var status: String?

        @Option(help: ArgumentHelp("Only this event type's (\(EventType.namesInProse)).", valueName: "type"))
        var type: String?

        @Option(help: ArgumentHelp("Only this user's.", valueName: "user-id"))
        var user: String?

        @Option(help: ArgumentHelp("Show this delivery's attempts instead (an ID of the list).", valueName: "delivery-id"))
        var attempts: Int64?

        @OptionGroup var paging: PageOptions
        @OptionGroup var client: ClientOptions

        func validate() throws {
            if let status, DeliveryStatus(rawValue: status) == nil {
                throw ValidationError("--status \"\(status)\" is not a delivery status (\(DeliveryStatus.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            if let type, EventType(rawValue: type) == nil {
                throw ValidationError("--type \"\(type)\" is not an event type (\(EventType.namesInProse))")
            }
        }

        func run() async throws {
            try await client.run { api in
                if let attempts {
                    let answer = try await api.get(["v1", "subscriptions", id, "deliveries", String(attempts), "attempts"])
                    if client.json { return printJSON(answer.body) }
                    let tries = try answer.decode(API.DeliveryAttemptList.self).attempts
                    print(tries.isEmpty ? "not tried yet" : TextOutput.table(
                        ["STARTED", "STATUS", "TOOK", "ERROR", "ANSWER"],
                        tries.map { [TextOutput.time($0.started_at), $0.status_code.map(String.init) ?? "-", "\($0.duration_ms) ms",
                                     TextOutput.orDash($0.error_kind), TextOutput.shortened(TextOutput.orDash($0.response_head), to: 40)] }
                    ))
                    return
                }
                var filters: [(String, String)] = []
                if let status { filters.append(("status", status)) }
                if let type { filters.append(("type", type)) }
                if let user { filters.append(("user_id", user)) }
                let pages = try await paging.fetch(api, ["v1", "subscriptions", id, "deliveries"], filters: filters)
                try pages.show(API.SubscriptionDelivery.self, json: client.json, more: "deliveries", none: "no deliveries match") { deliveries in
                    TextOutput.table(
                        ["ID", "MADE", "EVENT", "USER", "TYPE", "SEQ", "STATUS", "TRIES", "LAST"],
                        deliveries.map { [String($0.id), TextOutput.time($0.created_at), $0.event_id, $0.user_id, $0.type,
                                          String($0.sequence), $0.status, String($0.attempts),
                                          $0.last_status_code.map(String.init) ?? "-"] }
                    )
                }
            }
        }
    }

    /// POSTs to `/v1/subscriptions/<path>` with no body and shows the subscription it answers.
    static func post(_ client: ClientOptions, _ path: [String]) async throws {
        try await client.run { api in
            let answer = try await api.post(["v1", "subscriptions"] + path, body: EmptyBody())
            if client.json { return printJSON(answer.body) }
            print(try answer.decode(API.Subscription.self).block)
        }
    }
}

/// No body: the API reads none for these actions.
struct EmptyBody: Encodable {}

extension API.Subscription {
    var stateText: String {
        if !enabled { return "disabled" + (disabled_reason.map { ": \($0)" } ?? "") }
        return failing_since.map { "failing since \(TextOutput.time($0))" } ?? "enabled"
    }

    var block: String {
        TextOutput.block([
            ("id", id), ("url", url), ("types", event_types.joined(separator: ", ")), ("ordered", ordered ? "yes" : "no"),
            ("state", stateText), ("description", TextOutput.orDash(description)),
            ("last success", last_success_at.map(TextOutput.time) ?? "never"), ("created", TextOutput.time(created_at)),
        ])
    }
}
