import EchoRelayCore
import Foundation
import Hummingbird
import Logging

/// What the console does to one subscription. Each is a POST with the session's CSRF token
/// and a reason, shown on a confirmation page first and done only when that is confirmed; the
/// audit entry carries the reason. Enabling and disabling are an administrator's; rotating the
/// secret an administrator's and the owning app team's; a test and a recover anyone's who may
/// see the subscription. An app team sees only the subscriptions its token made.
enum SubscriptionAction: String, CaseIterable, Sendable {
    case enable, disable, test
    case rotateSecret = "rotate-secret"
    case recover

    var roles: Set<Role> {
        switch self {
        case .enable, .disable: [.admin]
        case .rotateSecret: [.admin, .app]
        case .test, .recover: .everyone
        }
    }

    var title: String {
        switch self {
        case .enable: "Enable"
        case .disable: "Disable"
        case .test: "Send a test delivery"
        case .rotateSecret: "Rotate the signing secret"
        case .recover: "Recover missed events"
        }
    }

    var hint: String {
        switch self {
        case .enable: "Deliveries resume, the waiting ones first, in each user's order."
        case .disable: "Deliveries wait until it is enabled again; none is lost."
        case .test: "A signed echorelay.test delivery, sent now, outside every user's sequence; its answer is shown."
        case .rotateSecret: "A new secret signs from now on, shown once; the old one signs too for 24 hours."
        case .recover: "Sends the verified events of its types, received in the window and since it was created, that it never got."
        }
    }
}

extension ConsoleController {
    @Sendable func subscription(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context, roles: .everyone) { signed in
            let subscription = try await existingSubscription(try context.parameters.decoded("id"), seenBy: signed.actor)
            return signed.page("subscription", title: "Subscription \(subscription.id)", notice: request.uri.queryParameters.get("done"),
                               subscriptionPage(subscription, role: signed.actor.role))
        }
    }

    func subscriptionPage(_ subscription: Subscription, role: Role) -> SubscriptionView {
        let offered = SubscriptionAction.allCases.filter { action in
            action.roles.contains(role) && (action != .test || sendTestDelivery != nil)
                && (action != .enable || !subscription.enabled) && (action != .disable || subscription.enabled)
        }
        return SubscriptionView(row: SubscriptionRow(subscription, now: now()), actions: offered.map { action in
            SubscriptionView.Action(action: ConsolePath.subscription(subscription.id) + "/" + action.rawValue, title: action.title,
                                    hint: action.hint, recover: action == .recover, beforeCreation: action == .recover && role != .app)
        })
    }

    /// The subscription as `principal` may see it: staff any, an app team only its own (any
    /// other is not found, as in the API).
    func existingSubscription(_ id: String, seenBy principal: Principal) async throws -> Subscription {
        try await store.subscription(id: id, seenBy: principal)
    }

    func subscriptionAction(_ action: SubscriptionAction, _ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context, roles: action.roles) { signed in
            let subscription = try await existingSubscription(try context.parameters.decoded("id"), seenBy: signed.actor)
            let form = signed.form!
            let back = ConsolePath.subscription(subscription.id)
            let reason = form.value("reason")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            var problems = SupportReason.problem(reason).map { [FieldProblem(field: "reason", reason: $0)] } ?? []
            var recovery: Recovery?
            if action == .recover {
                switch Self.parse(form.json(strings: ["reason", "since", "until"]), RecoverRequest.parse) {
                case .success(let body):
                    // Staff may tick "before its creation"; an app team's window starts at it.
                    let beforeCreation = signed.actor.role != .app && form.value("before_creation") == "yes"
                    recovery = Recovery.bounded(subscriptionID: subscription.id, since: body.since, until: body.until,
                                                beforeCreation: beforeCreation, subscriptionCreatedAt: subscription.createdAt)
                case .failure(let refused): problems += refused.fields.filter { $0.field != "reason" }
                }
            }
            guard problems.isEmpty else {
                return signed.page("subscription", title: "Subscription \(subscription.id)", status: .unprocessableContent,
                                   problem: .init(title: "Nothing was done", detail: nil, fields: problems),
                                   subscriptionPage(subscription, role: signed.actor.role))
            }
            guard form.value("confirm") == "yes" else {
                if let recovery, try await store.countRecovery(recovery) ?? 0 == 0 {
                    return signed.page("subscription", title: "Subscription \(subscription.id)",
                                       notice: "Nothing to recover: it received every event of its types in that window.",
                                       subscriptionPage(subscription, role: signed.actor.role))
                }
                return signed.page("confirm", title: "\(action.title)?", try await confirmation(
                    action, subscription, reason: reason, recovery: recovery, form: form, back: back
                ))
            }
            let note = AuditNote(actor: signed.actor, action: "subscription.\(action.rawValue.replacingOccurrences(of: "-", with: "_"))",
                                 reason: reason)
            let audit = { (target: String) in
                try await store.recordAudit(actor: note.actor, action: note.action, target: target, filter: nil, matched: nil, reason: note.reason)
            }
            context.logger.info("subscription \(action.rawValue) from the console", metadata: [
                "subscription.id": "\(subscription.id)", "actor": "\(signed.actor.name)",
            ])
            switch action {
            case .enable, .disable:
                let enabled = action == .enable
                _ = try await store.setSubscriptionEnabled(id: subscription.id, enabled,
                                                           reason: enabled ? nil : SubscriptionHealth.disabledByPersonPrefix + signed.actor.name,
                                                           audit: note)
                if enabled { workCreated(.delivery) }
                return ConsoleRenderer.redirect(to: back + "?" + ConsolePath.query([("done", enabled ? "Enabled." : "Disabled.")]))
            case .test:
                guard let sendTestDelivery, let secrets = try await store.signingSecrets(subscriptionID: subscription.id) else {
                    throw Problem.notFound("no subscription with id \"\(subscription.id)\"")
                }
                let sent = await sendTestDelivery(subscription, secrets)
                try await store.recordTestDelivery(subscriptionID: subscription.id, sent)
                try await audit(subscription.id)
                let answered = sent.attempt.statusCode.map { "answered \($0)" } ?? "did not answer: \(sent.attempt.errorKind?.rawValue ?? "error") — \(sent.attempt.error ?? "")"
                let delivered = sent.attempt.statusCode.map { (200..<300).contains($0) } ?? false
                return ConsoleRenderer.redirect(to: back + "?" + ConsolePath.query([
                    ("done", "Test delivery \(sent.webhookID) \(delivered ? "delivered" : "not delivered"): the backend \(answered)."),
                ]))
            case .rotateSecret:
                let secret = WebhookSecret.generate()
                guard try await store.rotateSubscriptionSecret(id: subscription.id, newSecret: secret,
                                                               overlap: SubscriptionsController<Context>.secretOverlap, audit: note) != nil else {
                    throw Problem.notFound("no subscription with id \"\(subscription.id)\"")
                }
                return signed.page("secret", title: "New signing secret", SecretPage(
                    heading: "New signing secret", subscriptionID: subscription.id, secret: secret, overlap: "24 hours", back: back
                ))
            case .recover:
                let replay: Replay
                do {
                    guard let started = try await store.startRecovery(recovery!, actor: signed.actor, reason: reason) else {
                        throw Problem.notFound("no subscription with id \"\(subscription.id)\"")
                    }
                    replay = started
                } catch let error as ReplayError {
                    throw Problem(error)
                }
                workCreated(.replay)
                metrics.replayRequested(kind: .recover)
                // Staff follow it on the replay's page; an app team sees it on its subscription's.
                guard Set<Role>.staff.contains(signed.actor.role) else {
                    return ConsoleRenderer.redirect(to: back + "?" + ConsolePath.query([
                        ("done", "Recover \(replay.id) started: \(replay.matched) event\(replay.matched == 1 ? "" : "s") will be sent again."),
                    ]))
                }
                return ConsoleRenderer.redirect(to: ConsolePath.replay(replay.id))
            }
        }
    }

    /// What the action will do, to be confirmed; a recover says how many events it will send.
    private func confirmation(_ action: SubscriptionAction, _ subscription: Subscription, reason: String, recovery: Recovery?,
                              form: ConsoleForm, back: String) async throws -> ConfirmPage {
        let name = SubscriptionNames.name(of: subscription)
        var summary = "\(action.hint) Subscription \(name) (\(subscription.id))."
        if let recovery {
            let matched = try await store.countRecovery(recovery) ?? 0
            summary = "\(matched) event\(matched == 1 ? "" : "s") it never received will be sent to \(name) (\(subscription.id)), in each user's order."
        }
        return ConfirmPage(
            heading: "\(action.title): \(name)?", summary: summary, items: [], reason: reason,
            action: back + "/" + action.rawValue,
            fields: form.fields.filter { !["csrf", "confirm"].contains($0.name) }.map { .init(name: $0.name, value: $0.value) },
            button: action.title, cancel: back
        )
    }
}

/// A subscription's deliveries, newest first, each linked to its attempts.
struct DeliveriesPage {
    struct Row {
        let createdAt: TimeView
        let eventID: String
        let type: String
        let sequence: Int64
        let userID: String
        let replayID: String?
        let webhookID: String
        let status: String
        let attempts: Int
        let lastStatusCode: Int?
        let attemptsLink: String
    }

    let name: String
    let back: String
    let deliveries: [Row]
    let older: String?
}

/// One delivery's attempts.
struct AttemptsPage {
    let webhookID: String
    let back: String
    let attempts: [EventPage.Attempt]
}

extension ConsoleController {
    @Sendable func subscriptionDeliveries(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context, roles: .everyone) { signed in
            let subscription = try await existingSubscription(try context.parameters.decoded("id"), seenBy: signed.actor)
            var reader = QueryReader(request)
            let cursor: Int64? = reader.cursor()
            let page = try await reader.page {
                try await store.subscriptionDeliveries(subscriptionID: subscription.id, SubscriptionDeliveryFilter(), beforeID: cursor, limit: $0)
            }
            let base = ConsolePath.subscription(subscription.id) + "/deliveries"
            let now = now()
            return signed.page("deliveries", title: "Deliveries", DeliveriesPage(
                name: SubscriptionNames.name(of: subscription), back: ConsolePath.subscription(subscription.id),
                deliveries: page.shown.map { delivery in
                    DeliveriesPage.Row(createdAt: TimeView(delivery.createdAt, now: now), eventID: delivery.eventID, type: delivery.type.rawValue,
                                       sequence: delivery.sequence, userID: delivery.userID, replayID: delivery.replayID,
                                       webhookID: delivery.webhookID, status: delivery.status.rawValue, attempts: delivery.attempts,
                                       lastStatusCode: delivery.lastStatusCode, attemptsLink: base + "/" + String(delivery.id))
                },
                older: page.cursorRow.map { base + "?" + ConsolePath.query([("cursor", String($0.id))]) }
            ))
        }
    }

    @Sendable func deliveryAttempts(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context, roles: .everyone) { signed in
            let subscription = try await existingSubscription(try context.parameters.decoded("id"), seenBy: signed.actor)
            let text = try context.parameters.decoded("delivery_id")
            guard let id = Int64(text), id > 0, id < .max, let attempts = try await store.deliveryAttempts(subscriptionID: subscription.id, deliveryID: id),
                  let delivery = try await store.subscriptionDeliveries(subscriptionID: subscription.id, SubscriptionDeliveryFilter(),
                                                                        beforeID: id + 1, limit: 1).first, delivery.id == id
            else { throw Problem.notFound("no delivery \(text.prefix(40)) to this subscription") }
            let now = now()
            return signed.page("attempts", title: "Delivery \(delivery.webhookID)", AttemptsPage(
                webhookID: delivery.webhookID, back: ConsolePath.subscription(subscription.id) + "/deliveries",
                attempts: attempts.map { EventPage.attempt($0, now: now) }
            ))
        }
    }
}
