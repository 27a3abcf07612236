import EchoRelayAPI
import EchoRelayCore
import EchoRelayServer
import EchoRelayStandIns
import Foundation

/// An event the demo pushed, and what it expects EchoRelay to make of it.
struct DemoPlannedEvent: Sendable {
    let eventID: String
    let userID: String
    let type: EventType
    /// A deactivation signed with a token the provider never issued: it must be rejected
    /// (`unknown_token`); every other event must be verified and delivered.
    let forged: Bool
    let sequence: Int64
}

/// The demo's result: each user's timeline as the server recorded it, checked against what
/// the subscriber received. Printed as text, or as this JSON with `--json`.
struct DemoReport: Encodable, Sendable {
    struct User: Encodable, Sendable {
        let user_id: String
        /// The user's state on the server (`active`, `deactivated`); null when unknown.
        @Nullable var state: String?
        @Nullable var phone_number: String?
        let events: [Row]
    }

    struct Row: Encodable, Sendable {
        let sequence: Int64
        let type: String
        let event_id: String
        let status: String
        @Nullable var reason: String?
        let forged: Bool
        /// The state of the delivery to the demo's subscription; null when there is none.
        @Nullable var delivery_status: String?
        /// The `webhook-id` of that delivery, as the server records it.
        @Nullable var webhook_id: String?
        /// Whether the subscriber received that `webhook-id` with a valid signature and a
        /// body that matches the server's record.
        let received: Bool
        let replay: Bool
        /// Whether this event ended as the demo expects.
        let ok: Bool
    }

    var users: [User]
    var summary: String
    var ok: Bool
    var problems: [String]
    /// What to check, once each.
    var hints: [String]

    /// Holds the server's record of every event against the plan and the subscriber's log.
    static func build(
        userIDs: [String], planned: [DemoPlannedEvent], timelines: [String: [API.TimelineEvent]],
        details: [String: API.Event], userStates: [String: API.User],
        subscriptionID: String, subscriber: StandInSubscriber, providerPort: Int, timedOut: Bool
    ) -> DemoReport {
        let plan = Dictionary(planned.map { ($0.eventID, $0) }, uniquingKeysWith: { first, _ in first })
        var problems: [String] = []
        var hints: [String] = []
        var users: [User] = []
        var verifiedAndDelivered = 0
        var forgedRejected = 0

        for userID in userIDs {
            var rows: [Row] = []
            let items = (timelines[userID] ?? []).sorted { $0.sequence < $1.sequence }
            for item in items {
                let forged = plan[item.id]?.forged ?? false
                let detail = details[item.id]
                let delivery = detail?.deliveries.first { $0.subscription_id == subscriptionID && $0.replay_id == nil }
                let arrivals = delivery.map { subscriber.received(webhookID: $0.webhook_id) } ?? []
                let matching = arrivals.first { arrival in
                    arrival.signatureValid && arrival.eventID == item.id && arrival.userID == userID
                        && arrival.sequence == item.sequence && arrival.type == item.type
                }
                let label = "\(userID) #\(item.sequence) \(item.type)"
                var ok = false
                if forged {
                    ok = item.status == EventStatus.rejected.rawValue && item.reason == VerificationReason.unknownToken.rawValue
                    if ok {
                        forgedRejected += 1
                    } else {
                        problems.append("the forged deactivation \(label) ended \(Self.outcome(item.status, item.reason)), not rejected (unknown_token)"
                                        + (delivery != nil ? "; it was sent to the subscriber" : ""))
                    }
                } else if item.status != EventStatus.verified.rawValue {
                    problems.append("\(label) ended \(Self.outcome(item.status, item.reason)), not verified")
                    if let hint = Self.explain(item.status, item.reason, providerPort: providerPort), !hints.contains(hint) {
                        hints.append(hint)
                    }
                } else if let delivery {
                    if delivery.status != DeliveryStatus.delivered.rawValue {
                        let last = delivery.attempts.last.map { attempt in
                            " (last attempt: " + (attempt.status_code.map { "HTTP \($0)" } ?? attempt.error_kind ?? "no answer")
                                + (attempt.error.map { ", \($0)" } ?? "") + ")"
                        } ?? ""
                        problems.append("\(label) was verified but its delivery is \(delivery.status)\(last)")
                    } else if matching == nil {
                        if let bad = arrivals.first(where: { !$0.signatureValid }) {
                            problems.append("\(label): the subscriber received webhook-id \(delivery.webhook_id) with a bad signature: \(bad.signatureProblem ?? "")")
                        } else if arrivals.isEmpty {
                            problems.append("\(label): the server says webhook-id \(delivery.webhook_id) was delivered, but the subscriber never received it")
                        } else {
                            problems.append("\(label): the subscriber received webhook-id \(delivery.webhook_id), but its body does not match the server's record")
                        }
                    } else {
                        ok = true
                        verifiedAndDelivered += 1
                    }
                } else {
                    problems.append("\(label) was verified but the server has no delivery of it to the demo's subscription")
                }
                rows.append(Row(
                    sequence: item.sequence, type: item.type, event_id: item.id, status: item.status, reason: item.reason,
                    forged: forged, delivery_status: delivery?.status, webhook_id: delivery?.webhook_id,
                    received: matching != nil, replay: matching?.replayID != nil, ok: ok
                ))
            }
            for event in planned where event.userID == userID && !items.contains(where: { $0.id == event.eventID }) {
                problems.append("\(userID) #\(event.sequence) \(event.type.rawValue) (\(event.eventID)) is missing from the user's timeline")
            }
            let state = userStates[userID]
            users.append(User(user_id: userID, state: state?.state, phone_number: state?.phone_number, events: rows))
        }
        if timedOut {
            problems.insert("not everything was decided and delivered within \(DemoTour.waitLimitText)", at: 0)
        }

        let total = users.reduce(0) { $0 + $1.events.count }
        var summary = "\(TextOutput.count(total, "event", "events")): \(verifiedAndDelivered) verified and delivered, "
            + "\(forgedRejected) forged \(forgedRejected == 1 ? "deactivation" : "deactivations") rejected (unknown_token)"
        let unexpected = total - verifiedAndDelivered - forgedRejected
        if unexpected > 0 { summary += ", \(unexpected) not as expected" }
        return DemoReport(users: users, summary: summary, ok: problems.isEmpty && forgedRejected > 0,
                          problems: problems, hints: hints)
    }

    static func outcome(_ status: String, _ reason: String?) -> String {
        reason.map { "\(status) (\($0))" } ?? status
    }

    /// What to check when an event the demo expects verified was not.
    static func explain(_ status: String, _ reason: String?, providerPort: Int) -> String? {
        let portNote = providerPort == DemoDefaults.providerPort ? ""
            : " and, for --provider-port \(providerPort), ECHORELAY_ECHO_ALLOWED_HOSTS=127.0.0.1:\(providerPort)"
        switch reason {
        case VerificationReason.hostNotAllowed.rawValue?, VerificationReason.schemeNotAllowed.rawValue?:
            return "the server does not accept the demo provider; start it with `echorelay serve --demo`\(portNote)"
        case VerificationReason.consumerKeyMismatch.rawValue?:
            return "serve --demo takes the demo consumer key (\(DemoDefaults.consumerKey)) only when ECHORELAY_CONSUMER_KEY is not set"
        case VerificationReason.timestampOutOfWindow.rawValue?:
            return "the clocks of this machine and the server's differ by more than 5 minutes"
        case VerificationReason.providerUnavailable.rawValue?:
            return "the server could not reach the stand-in provider on 127.0.0.1:\(providerPort); it must run on this machine"
        case VerificationReason.providerNotConfigured.rawValue?:
            return "the server's verify worker has no provider for this path; start it with `echorelay serve --demo`"
        case VerificationReason.clientRefused.rawValue?, VerificationReason.wrongClient.rawValue?:
            return "serve --demo uses the demo's OAuth 2 client (\(DemoDefaults.oauth2ClientID)) only when ECHORELAY_OAUTH2_INTROSPECTION_URL is not set"
        case nil where status == EventStatus.pending.rawValue:
            return "EchoRelay has not decided it; is its verify worker running (serve --role all, the default)?"
        default:
            return nil
        }
    }

    /// The readable timeline: one table per user. The summary and any problems are printed
    /// at the very end, after the clean-up.
    func text() -> String {
        var lines: [String] = []
        for user in users {
            var heading = user.user_id
            if let state = user.state {
                heading += " — \(state)" + (user.phone_number.map { ", \($0)" } ?? "")
            }
            lines.append(heading)
            let rows = user.events.map { row -> [String] in
                let delivery: String
                if row.forged && row.delivery_status == nil {
                    delivery = "forged: nothing delivered"
                } else if let webhookID = row.webhook_id {
                    delivery = row.received
                        ? "delivered, webhook-id \(webhookID), signature valid" + (row.replay ? " (replay)" : "")
                        : "\(row.delivery_status ?? "-"), webhook-id \(webhookID), not received intact"
                } else {
                    delivery = row.status == EventStatus.verified.rawValue ? "no delivery" : "nothing to deliver"
                }
                return [String(row.sequence), row.type, Self.outcome(row.status, row.reason), delivery, row.ok ? "ok" : "UNEXPECTED"]
            }
            lines.append(TextOutput.table(["SEQ", "TYPE", "OUTCOME", "DELIVERY", "CHECK"], rows, indent: "  "))
        }
        return lines.joined(separator: "\n")
    }

    func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }
}
