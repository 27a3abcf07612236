import EchoRelayAPI
import EchoRelayCore

// The wire bodies (EchoRelayAPI) made from the store's records: times as RFC 3339 text, enums
// by their raw values, every outcome member null until there is an outcome.

extension API.Event {
    init(_ event: StoredEvent, deliveries: [DeliveryRecord], securityEvent: SecurityEventRecord? = nil) {
        let provider = event.providerUserID == nil && event.providerPhoneNumber == nil
            ? nil : API.ProviderValues(user_id: event.providerUserID, phone_number: event.providerPhoneNumber)
        self.init(
            id: event.id, type: event.type.rawValue, user_id: event.userID, sequence: event.sequence,
            status: event.status.rawValue, reason: event.reason?.rawValue, occurred_at: RFC3339.format(event.occurredAt),
            received_at: RFC3339.format(event.receivedAt), decided_at: event.decidedAt.map(RFC3339.format),
            verified_at: event.verifiedAt.map(RFC3339.format), provider: provider, source: event.source.rawValue,
            path: event.path.rawValue,
            security_event: securityEvent.map { API.SecurityEventOrigin(issuer: $0.issuer, jti: $0.jti, event_type: $0.eventType) },
            pruned_at: event.prunedAt.map(RFC3339.format), session_reason: event.sessionReason,
            deliveries: deliveries.map(API.Delivery.init)
        )
    }
}

extension API.Delivery {
    init(_ delivery: DeliveryRecord) {
        self.init(
            subscription_id: delivery.subscriptionID, replay_id: delivery.replayID, webhook_id: delivery.webhookID,
            status: delivery.status.rawValue, created_at: RFC3339.format(delivery.createdAt),
            finished_at: delivery.finishedAt.map(RFC3339.format), next_attempt_at: delivery.nextAttemptAt.map(RFC3339.format),
            attempts: delivery.attempts.map(API.DeliveryAttempt.init)
        )
    }
}

extension API.DeliveryAttempt {
    init(_ attempt: EchoRelayCore.DeliveryAttempt) {
        self.init(
            started_at: RFC3339.format(attempt.startedAt), duration_ms: attempt.durationMilliseconds,
            status_code: attempt.statusCode, error_kind: attempt.errorKind?.rawValue, error: attempt.error,
            response_head: attempt.responseHead
        )
    }
}

extension API.SubscriptionDelivery {
    init(_ delivery: SubscriptionDelivery) {
        self.init(
            id: delivery.id, event_id: delivery.eventID, user_id: delivery.userID, type: delivery.type.rawValue,
            sequence: delivery.sequence, replay_id: delivery.replayID, webhook_id: delivery.webhookID,
            status: delivery.status.rawValue, attempts: delivery.attempts, created_at: RFC3339.format(delivery.createdAt),
            finished_at: delivery.finishedAt.map(RFC3339.format), next_attempt_at: delivery.nextAttemptAt.map(RFC3339.format),
            last_status_code: delivery.lastStatusCode
        )
    }
}

extension API.TimelineEvent {
    init(_ entry: TimelineEntry) {
        let event = entry.event, counts = entry.deliveries
        self.init(
            id: event.id, type: event.type.rawValue, user_id: event.userID, sequence: event.sequence,
            status: event.status.rawValue, reason: event.reason?.rawValue, occurred_at: RFC3339.format(event.occurredAt),
            received_at: RFC3339.format(event.receivedAt), decided_at: event.decidedAt.map(RFC3339.format),
            verified_at: event.verifiedAt.map(RFC3339.format), pruned_at: event.prunedAt.map(RFC3339.format),
            session_reason: event.sessionReason,
            deliveries: API.DeliveryCounts(total: counts.total, pending: counts.pending, delivered: counts.delivered,
                                           dead: counts.dead, cancelled: counts.cancelled, replays: counts.replays)
        )
    }
}

extension API.User {
    init(_ user: UserState) {
        self.init(
            user_id: user.userID, state: user.state.rawValue, phone_number: user.phoneNumber, last_sequence: user.lastSequence,
            last_event_at: RFC3339.format(user.lastEventAt), updated_at: RFC3339.format(user.updatedAt)
        )
    }
}

extension API.DeadLetter {
    init(_ letter: DeadLetter) {
        self.init(
            event_id: letter.eventID, subscription_id: letter.subscriptionID, replay_id: letter.replayID, user_id: letter.userID,
            type: letter.type.rawValue, sequence: letter.sequence, webhook_id: letter.webhookID, attempts: letter.attempts,
            received_at: RFC3339.format(letter.receivedAt), dead_at: RFC3339.format(letter.deadAt),
            last_status_code: letter.lastStatusCode, last_error: letter.lastError
        )
    }
}

extension API.Subscription {
    /// With `secret` only when it was just made (creation, rotation).
    init(_ subscription: Subscription, secret: String? = nil) {
        self.init(
            id: subscription.id, url: subscription.url, event_types: subscription.eventTypes.map(\.rawValue),
            description: subscription.description, ordered: subscription.ordered, enabled: subscription.enabled,
            disabled_reason: subscription.disabledReason, created_at: RFC3339.format(subscription.createdAt),
            updated_at: RFC3339.format(subscription.updatedAt), last_success_at: subscription.lastSuccessAt.map(RFC3339.format),
            failing_since: subscription.failingSince.map(RFC3339.format), secret: secret
        )
    }
}

extension API.JSON {
    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .integer(let value): self = .integer(value)
        case .number(let value): self = .number(value)
        case .string(let value): self = .string(value)
        case .array(let values): self = .array(values.map(API.JSON.init))
        case .object(let members): self = .object(members.mapValues(API.JSON.init))
        }
    }
}

extension API.Replay {
    init(_ replay: Replay) {
        self.init(
            id: replay.id, kind: replay.kind.rawValue, state: replay.state.rawValue, reason: replay.reason,
            actor: Actor(name: replay.actorName, role: replay.actorRole), event_id: replay.eventID,
            filter: replay.filter.map(API.JSON.init), matched: replay.matched, sent: replay.sent, delivered: replay.delivered,
            failed: replay.failed, created_at: RFC3339.format(replay.createdAt), finished_at: replay.finishedAt.map(RFC3339.format)
        )
    }
}

extension API.AuditEntry {
    init(_ entry: AuditEntry) {
        self.init(
            id: entry.id, at: RFC3339.format(entry.at),
            actor: Actor(name: entry.actorName, role: entry.actorRole, token_id: entry.actorTokenID), action: entry.action,
            target: entry.target, filter: entry.filter.map(API.JSON.init), matched: entry.matched, reason: entry.reason
        )
    }
}

extension API.SecurityEvent {
    init(_ record: SecurityEventRecord) {
        self.init(
            issuer: record.issuer, jti: record.jti, event_type: record.eventType, issued_at: RFC3339.format(record.issuedAt),
            received_at: RFC3339.format(record.receivedAt),
            // The subject as the transmitter sent it (a JSON object), or null.
            subject: record.subject.flatMap { try? JSONValue.parse(Array($0.utf8)) }.map(API.JSON.init),
            disposition: record.disposition.rawValue, note: record.note, verification_state: record.verificationState,
            event_id: record.eventID
        )
    }
}
