import ArgumentParser
import EchoRelayAPI

/// `echorelay deliveries show <webhook-id>`: a backend says it got `msg_…`; what was it?
struct DeliveriesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deliveries",
        abstract: "Look up what EchoRelay sent to a subscriber.",
        subcommands: [Show.self]
    )

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what was sent with one webhook-id: the event, the subscription, and each delivery with every attempt.",
            discussion: """
                The webhook-id is the header a subscriber received (msg_…); the original delivery and its \
                replays share it. A support or admin token sees any delivery; an app token only those of \
                its own subscriptions.

                \(ClientHelp.exitStatus)
                """
        )

        @Argument(help: ArgumentHelp("The webhook-id header the subscriber received (msg_…).", valueName: "webhook-id"))
        var webhookID: String

        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await client.run { api in
                let answer: APIAnswer
                do throws(ClientError) {
                    answer = try await api.get(["v1", "deliveries", webhookID])
                } catch {
                    var error = error
                    if error.status == 404 {
                        error.hint = "check the webhook-id (msg_ and 26 hex digits); deliveries are kept for ECHORELAY_RETAIN_EVENTS once final, and a test delivery's id is not looked up here"
                    }
                    throw error
                }
                if client.json { return printJSON(answer.body) }
                print(Self.text(try answer.decode(API.WebhookDelivery.self)))
            }
        }

        static func text(_ found: API.WebhookDelivery) -> String {
            let event = found.event
            let subscription = found.subscription.map { subscription in
                [subscription.description, subscription.url].compactMap { $0 }.joined(separator: ", ")
                    + (subscription.enabled ? "" : " (disabled)")
            } ?? "deleted"
            var sections = [TextOutput.block([
                ("webhook id", found.webhook_id),
                ("event", event.id), ("type", event.type), ("user", event.user_id), ("sequence", String(event.sequence)),
                ("status", event.status + (event.reason.map { " (\($0))" } ?? "")),
                ("received at", TextOutput.instant(event.received_at)),
                ("subscription", "\(found.subscription_id): \(subscription)"),
            ])]
            for (index, delivery) in found.deliveries.enumerated() {
                let heading = delivery.replay_id.map { "delivery \(index + 1) of \(found.deliveries.count), replay \($0)" }
                    ?? "delivery \(index + 1) of \(found.deliveries.count), the original"
                sections.append(EventsCommand.Show.deliveryText(delivery, heading: heading))
            }
            return sections.joined(separator: "\n\n")
        }
    }
}
