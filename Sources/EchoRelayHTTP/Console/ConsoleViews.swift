import EchoRelayCore
import Foundation

// What each console template shows, built from the store's records. Plain values only: the
// templates format nothing, and Mustache escapes every value.

struct MessagePage {
    struct Link {
        let label: String
        let href: String
    }

    let heading: String
    let text: String
    let link: Link?
}

struct SignInPage {
    /// Pairs the form with the sign-in cookie (login CSRF).
    let csrf: String
}

struct HomePage {
    let userID: String
}

struct UserPage {
    struct State {
        let state: String
        let phone: String?
        let lastSequence: Int64
        let lastEventAt: TimeView

        init(_ user: UserState, now: Date) {
            state = user.state.rawValue
            phone = user.phoneNumber
            lastSequence = user.lastSequence
            lastEventAt = TimeView(user.lastEventAt, now: now)
        }
    }

    let userID: String
    let state: State?
    let events: [TimelineRow]
    let older: String?
    /// The bulk replay form, prefilled with this user.
    let bulkReplay: String
}

struct TimelineRow {
    struct Delivery {
        let subscriptionID: String
        let subscriptionName: String
        let status: String
    }

    let id: String
    let link: String
    let userID: String
    let userLink: String
    let type: String
    let sequence: Int64
    let status: String
    let reason: String?
    let receivedAt: TimeView
    let deliveries: [Delivery]
    let replays: Int?
    /// When retention removed its deliveries (they are then none, not "none wanted").
    let prunedAt: TimeView?

    init(_ entry: TimelineEntry, names: SubscriptionNames, now: Date) {
        let event = entry.event
        id = event.id
        link = ConsolePath.event(event.id)
        userID = event.userID
        userLink = ConsolePath.user(event.userID)
        type = event.type.rawValue
        sequence = event.sequence
        status = event.status.rawValue
        reason = event.reason?.rawValue
        receivedAt = TimeView(event.receivedAt, now: now)
        deliveries = entry.deliveries.bySubscription.map {
            Delivery(subscriptionID: $0.subscriptionID, subscriptionName: names($0.subscriptionID), status: $0.status.rawValue)
        }
        replays = entry.deliveries.replays > 0 ? entry.deliveries.replays : nil
        prunedAt = event.prunedAt.map { TimeView($0, now: now) }
    }
}

/// A checkbox or option of a form's filter.
struct Choice {
    let name: String
    let checked: Bool
}

/// Every user's events, newest received first, with the filters as they were asked.
struct RecentEventsPage {
    let types: [Choice]
    let statuses: [Choice]
    let reasons: [Choice]
    let subscriptionID: String
    let since: String
    let until: String
    let events: [TimelineRow]
    let older: String?

    init(_ query: RecentEventsQuery, since: String, until: String, events: [TimelineRow], older: String?) {
        types = EventType.allCases.map { Choice(name: $0.rawValue, checked: query.types?.contains($0) == true) }
        statuses = EventStatus.allCases.map { Choice(name: $0.rawValue, checked: query.statuses?.contains($0) == true) }
        reasons = VerificationReason.allCases.map { Choice(name: $0.rawValue, checked: query.reasons?.contains($0) == true) }
        subscriptionID = query.subscriptionID ?? ""
        self.since = since
        self.until = until
        self.events = events
        self.older = older
    }
}

struct EventPage {
    struct Provider {
        let userID: String
        let phone: String?
    }

    struct Delivery {
        let subscriptionID: String
        let subscriptionName: String
        let replayID: String?
        let webhookID: String
        /// The page anchor of the first delivery with its webhook-id (the console's search
        /// opens the event there); nil on its replays, which share the id.
        let anchor: String?
        let status: String
        let createdAt: TimeView
        let nextAttemptAt: TimeView?
        let attempts: [Attempt]
    }

    struct Attempt {
        let startedAt: TimeView
        let statusCode: Int?
        let latency: String
        let errorKind: String?
        let error: String?
        let answer: String?
    }

    /// Shown the same on the event's page and on a subscription's delivery page.
    static func attempt(_ attempt: DeliveryAttempt, now: Date) -> Attempt {
        Attempt(startedAt: TimeView(attempt.startedAt, now: now), statusCode: attempt.statusCode,
                latency: milliseconds(attempt.duration), errorKind: attempt.errorKind?.rawValue,
                error: attempt.error, answer: attempt.responseHead.flatMap { $0.isEmpty ? nil : $0 })
    }

    struct Target {
        let id: String
        let name: String
        let url: String
    }

    let id: String
    let userID: String
    let userLink: String
    /// The Security Event Token an event came as (the page shows its issuer, jti and event type).
    let securityEvent: SecurityEventRecord?
    let type: String
    let sequence: Int64
    let status: String
    let reason: String?
    /// How the provider was asked: `echo`, `oauth2` or `set`, and in words.
    let path: String
    let pathText: String
    let occurredAt: TimeView
    let receivedAt: TimeView
    let decidedAt: TimeView?
    let prunedAt: TimeView?
    let provider: Provider?
    let deliveries: [Delivery]
    let verified: Bool
    let subscriptions: [Target]
    let replayAction: String
    let reasonDraft: String

    init(_ event: StoredEvent, deliveries: [DeliveryRecord], subscriptions: [Subscription], names: SubscriptionNames,
         securityEvent: SecurityEventRecord? = nil, reasonDraft: String, now: Date) {
        id = event.id
        self.securityEvent = securityEvent
        userID = event.userID
        userLink = ConsolePath.user(event.userID)
        type = event.type.rawValue
        sequence = event.sequence
        status = event.status.rawValue
        reason = event.reason?.rawValue
        path = event.path.rawValue
        pathText = switch event.path {
        case .echo: "OAuth Echo"
        case .oauth2: "OAuth 2 introspection"
        case .set: "the Security Event Token's signature"
        }
        occurredAt = TimeView(event.occurredAt, now: now)
        receivedAt = TimeView(event.receivedAt, now: now)
        decidedAt = event.decidedAt.map { TimeView($0, now: now) }
        prunedAt = event.prunedAt.map { TimeView($0, now: now) }
        provider = event.providerUserID.map { Provider(userID: $0, phone: event.providerPhoneNumber) }
        var anchored = Set<String>()
        self.deliveries = deliveries.map { delivery in
            Delivery(
                subscriptionID: delivery.subscriptionID, subscriptionName: names(delivery.subscriptionID), replayID: delivery.replayID,
                webhookID: delivery.webhookID,
                anchor: anchored.insert(delivery.webhookID).inserted ? ConsolePath.deliveryAnchor(delivery.webhookID) : nil,
                status: delivery.status.rawValue, createdAt: TimeView(delivery.createdAt, now: now),
                nextAttemptAt: delivery.status == .pending ? delivery.nextAttemptAt.map { TimeView($0, now: now) } : nil,
                attempts: delivery.attempts.map { Self.attempt($0, now: now) }
            )
        }
        verified = event.status == .verified
        self.subscriptions = subscriptions.map { Target(id: $0.id, name: names($0.id), url: $0.url) }
        replayAction = ConsolePath.event(event.id) + "/replay"
        self.reasonDraft = reasonDraft
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
    }
}

/// "Are you sure?" for an action that sends deliveries: what it will do, and a form that
/// posts the same fields again with `confirm=yes`.
struct ConfirmPage {
    struct Hidden {
        let name: String
        let value: String
    }

    let heading: String
    let summary: String
    let items: [String]
    let reason: String
    let action: String
    let fields: [Hidden]
    let button: String
    let cancel: String
}

struct BulkReplayPage {
    let userID: String
    let subscriptionID: String
    let types: [Choice]
    let since: String
    let until: String
    let statuses: [Choice]
    let reason: String

    /// The form as it was posted (or prefilled), so a refused form keeps what was typed.
    init(_ form: ConsoleForm) {
        userID = form.value("user_id") ?? ""
        subscriptionID = form.value("subscription_id") ?? ""
        let types = Set(form.values("types"))
        self.types = EventType.allCases.map { Choice(name: $0.rawValue, checked: types.contains($0.rawValue)) }
        since = form.value("since") ?? ""
        until = form.value("until") ?? ""
        let status = form.value("status")
        statuses = DeliveryStatus.allCases.map { Choice(name: $0.rawValue, checked: $0.rawValue == status) }
        reason = form.value("reason") ?? ""
    }
}

struct ReplayPage {
    let id: String
    let state: String
    let running: Bool
    let kind: String
    let eventID: String?
    let eventLink: String?
    let matched: Int
    let sent: Int
    let delivered: Int
    let failed: Int
    let actor: String
    let reason: String
    let createdAt: TimeView
    let finishedAt: TimeView?
    let filter: String?
    let cancelAction: String

    init(_ replay: Replay, now: Date) {
        id = replay.id
        state = replay.state.rawValue
        running = replay.state == .running
        kind = replay.kind.rawValue
        eventID = replay.eventID
        eventLink = replay.eventID.map(ConsolePath.event)
        matched = replay.matched
        sent = replay.sent
        delivered = replay.delivered
        failed = replay.failed
        actor = "\(replay.actorName) (\(replay.actorRole))"
        reason = replay.reason
        createdAt = TimeView(replay.createdAt, now: now)
        finishedAt = replay.finishedAt.map { TimeView($0, now: now) }
        filter = replay.filter.map { String(decoding: $0.canonicalEncoding(), as: UTF8.self) }
        cancelAction = ConsolePath.replay(replay.id) + "/cancel"
    }
}

struct DeadLettersPage {
    let subscriptionID: String
    let letters: [DeadLetterRow]
    let older: String?
    /// The subscription filtered by, for the empty page's sentence; nil when none is.
    var filteredBy: String? { subscriptionID.isEmpty ? nil : subscriptionID }
}

struct DeadLetterRow {
    let eventID: String
    let eventLink: String
    let type: String
    let sequence: Int64
    let userID: String
    let userLink: String
    let subscriptionID: String
    let subscriptionName: String
    let replayID: String?
    let attempts: Int
    let lastStatusCode: Int?
    let lastError: String?
    let deadAt: TimeView

    init(_ letter: DeadLetter, names: SubscriptionNames, now: Date) {
        eventID = letter.eventID
        eventLink = ConsolePath.event(letter.eventID)
        type = letter.type.rawValue
        sequence = letter.sequence
        userID = letter.userID
        userLink = ConsolePath.user(letter.userID)
        subscriptionID = letter.subscriptionID
        subscriptionName = names(letter.subscriptionID)
        replayID = letter.replayID
        attempts = letter.attempts
        lastStatusCode = letter.lastStatusCode
        lastError = letter.lastError
        deadAt = TimeView(letter.deadAt, now: now)
    }
}

struct SubscriptionsPage {
    let subscriptions: [SubscriptionRow]
    let next: String?
}

struct SubscriptionRow {
    let id: String
    let link: String
    let name: String
    let url: String
    let types: [String]
    let ordered: Bool
    /// healthy, failing or disabled.
    let health: String
    let disabledReason: String?
    let lastSuccessAt: TimeView?
    let failingSince: TimeView?

    init(_ subscription: Subscription, now: Date) {
        id = subscription.id
        link = ConsolePath.subscription(subscription.id)
        name = SubscriptionNames.name(of: subscription)
        url = subscription.url
        types = subscription.eventTypes.map(\.rawValue)
        ordered = subscription.ordered
        health = !subscription.enabled ? "disabled" : subscription.failingSince != nil ? "failing" : "healthy"
        disabledReason = subscription.enabled ? nil : subscription.disabledReason ?? "disabled by an administrator"
        lastSuccessAt = subscription.lastSuccessAt.map { TimeView($0, now: now) }
        failingSince = subscription.failingSince.map { TimeView($0, now: now) }
    }
}

/// One subscription and the actions this role may take on it.
struct SubscriptionView {
    struct Action {
        let action: String
        let title: String
        let hint: String
        let recover: Bool
        /// Staff may reach back before the subscription's creation; an app team may not.
        let beforeCreation: Bool
    }

    let row: SubscriptionRow
    let actions: [Action]
}

/// A rotated signing secret, shown once.
struct SecretPage {
    let heading: String
    let subscriptionID: String
    let secret: String
    let overlap: String
    let back: String
}

struct AuditPage {
    let action: String
    let target: String
    let entries: [AuditRow]
    let older: String?
}

struct AuditRow {
    let at: TimeView
    let actor: String
    let role: String
    let action: String
    let target: String?
    let targetLink: String?
    let filter: String?
    let matched: Int?
    let reason: String?

    init(_ entry: AuditEntry, now: Date) {
        at = TimeView(entry.at, now: now)
        actor = entry.actorName
        role = entry.actorRole
        action = entry.action
        target = entry.target
        targetLink = entry.target.flatMap { target in
            entry.action.hasPrefix("event.") ? ConsolePath.event(target) : entry.action.hasPrefix("replay.") ? ConsolePath.replay(target) : nil
        }
        filter = entry.filter.map { String(decoding: $0.canonicalEncoding(), as: UTF8.self) }
        matched = entry.matched
        reason = entry.reason
    }
}

/// How the console names a subscription: its description, else its URL's host (with the
/// path when two share a host), else its id. The id stays in the page, as the name's title.
struct SubscriptionNames {
    private let names: [String: String]

    init(_ subscriptions: [Subscription]) {
        let hosts = Dictionary(subscriptions.map { (URLComponents(string: $0.url)?.host ?? "", 1) }, uniquingKeysWith: +)
        names = Dictionary(uniqueKeysWithValues: subscriptions.map { subscription in
            let host = URLComponents(string: subscription.url)?.host ?? ""
            return (subscription.id, Self.name(of: subscription, hostIsShared: hosts[host, default: 0] > 1))
        })
    }

    /// A subscription gone from the list keeps its id, marked deleted.
    func callAsFunction(_ id: String) -> String { names[id] ?? "\(id) (deleted)" }

    static func name(of subscription: Subscription, hostIsShared: Bool = false) -> String {
        if let description = subscription.description?.trimmingCharacters(in: .whitespaces), !description.isEmpty {
            return description
        }
        guard let url = URLComponents(string: subscription.url), let host = url.host, !host.isEmpty else { return subscription.id }
        return hostIsShared && url.path.count > 1 ? host + url.path : host
    }
}

struct SharedSignalsPage {
    let configured: Bool
    let stream: StreamView?
    let sets: [SetRow]

    struct StreamView {
        let streamID: String
        let delivery: String
        let endpointURL: String
        let status: String?
        let statusReason: String?
        let statusCheckedAt: TimeView?
        let verification: VerificationView?

        init(_ stream: SecurityEventStream, now: Date) {
            streamID = stream.streamID
            delivery = stream.delivery.rawValue
            endpointURL = stream.endpointURL
            status = stream.status?.rawValue
            statusReason = stream.statusReason
            statusCheckedAt = stream.statusCheckedAt.map { TimeView($0, now: now) }
            verification = stream.verification.map { VerificationView($0, now: now) }
        }
    }

    struct VerificationView {
        let outcome: String
        let elapsed: String?
        let requestedAt: TimeView?

        init(_ verification: SecurityEventStream.Verification, now: Date) {
            outcome = verification.outcome.rawValue
            elapsed = SecurityEventStream.milliseconds(verification.elapsed).map { "\($0) ms" }
            requestedAt = TimeView(verification.requestedAt, now: now)
        }
    }

    struct SetRow {
        let receivedAt: TimeView?
        let jti: String
        let eventType: String
        let disposition: String
        let eventID: String?
        let eventLink: String?
        let detail: String

        init(_ set: SecurityEventRecord, now: Date) {
            receivedAt = TimeView(set.receivedAt, now: now)
            jti = set.jti
            // The type's last path segment names it (`credential-change`).
            eventType = set.eventType.split(separator: "/").last.map(String.init) ?? "—"
            disposition = set.disposition.rawValue
            eventID = set.eventID
            eventLink = set.eventID.map(ConsolePath.event)
            detail = set.disposition == .verification ? "state " + (set.verificationState ?? "none") : (set.note ?? "—")
        }
    }
}
