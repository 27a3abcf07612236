import EchoRelayCore
import Foundation
import Hummingbird
import Logging

/// What the console does to one subscription. Each is a POST with the session's CSRF token
/// and a reason, shown on a confirmation page first and done only when that is confirmed; the
/// audit entry carries the reason. Roles as the API's: enabling, disabling and rotating the
/// secret are an administrator's; a test and a recover are support's too.
enum SubscriptionAction: String, CaseIterable, Sendable {
    case enable, disable, test
    case rotateSecret = "rotate-secret"
    case recover

    var roles: Set<Role> {
        switch self {
        case .enable, .disable, .rotateSecret: [.admin]
        case .test, .recover: .staff
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
        case .recover: "Sends the verified events of its types, received in the window, that it never got."
        }
    }
}

extension ConsoleController {
    @Sendable func subscription(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let subscription = try await existingSubscription(try context.parameters.decoded("id"))
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
                                    hint: action.hint, button: action.title, recover: action == .recover)
        })
    }

    func existingSubscription(_ id: String) async throws -> Subscription {
        guard let subscription = try await store.subscription(id: id) else { throw Problem.notFound("no subscription with id \"\(id)\"") }
        return subscription
    }

    func subscriptionAction(_ action: SubscriptionAction, _ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context, roles: action.roles) { signed in
            let subscription = try await existingSubscription(try context.parameters.decoded("id"))
            let form = signed.form!
            let back = ConsolePath.subscription(subscription.id)
            let reason = form.value("reason")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            var problems = SupportReason.problem(reason).map { [FieldProblem(field: "reason", reason: $0)] } ?? []
            var recovery: Recovery?
            if action == .recover {
                switch Self.parse(form.json(strings: ["reason", "since", "until"]), RecoverRequest.parse) {
                case .success(let body): recovery = Recovery(subscriptionID: subscription.id, since: body.since, until: body.until)
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
            let audit = { (target: String) in
                try await store.recordAudit(actor: signed.actor, action: "subscription.\(action.rawValue.replacingOccurrences(of: "-", with: "_"))",
                                            target: target, filter: nil, matched: nil, reason: reason)
            }
            context.logger.info("subscription \(action.rawValue) from the console", metadata: [
                "subscription.id": "\(subscription.id)", "actor": "\(signed.actor.name)",
            ])
            switch action {
            case .enable, .disable:
                let enabled = action == .enable
                _ = try await store.setSubscriptionEnabled(id: subscription.id, enabled,
                                                           reason: enabled ? nil : SubscriptionHealth.disabledByPersonPrefix + signed.actor.name)
                try await audit(subscription.id)
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
                                                               overlap: SubscriptionsController<Context>.secretOverlap) != nil else {
                    throw Problem.notFound("no subscription with id \"\(subscription.id)\"")
                }
                try await audit(subscription.id)
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
