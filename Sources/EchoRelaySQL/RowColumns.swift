import EchoRelayCore

/// What each stored type's `init(row:)` reads, in its order: the select lists both stores
/// share (their SQL dialects agree on these).

extension ConsoleSession {
    /// What `init(row:)` reads of a session `s` and its access token `t` (none for
    /// `ECHORELAY_ADMIN_TOKEN`'s), in order; the name is the token's current one if it has a row.
    public static let columns = "s.token_id, coalesce(t.name, s.name), s.role, s.form_token, s.expires_at, s.credential_sha256"
}

extension AccessTokenRecord {
    /// What `init(row:)` reads of `access_tokens`, in order.
    public static let columns = "id, name, role, created_at, revoked_at"
}

extension UserState {
    /// What `init(row:)` reads of `users`, in order.
    public static let columns = "user_id, state, phone_number, last_sequence, last_event_at, updated_at"
}

extension DeadLetter {
    /// What `init(row:)` reads of a delivery `d` and its event `e`, in order; after them each
    /// store selects the last attempt's status code and error, as it finds that attempt.
    public static let columns = """
        d.id, d.event_id, d.subscription_id, d.replay_id, d.user_id, e.type, d.sequence, d.webhook_id,
        d.attempts, e.received_at, coalesce(d.finished_at, d.created_at)
        """
}

extension Replay {
    /// What `init(row:)` reads of a replay `r` and its deliveries `d`, grouped by `r.id`.
    public static let columns = """
        r.id, r.kind, r.state, r.reason, r.actor_name, r.actor_role, r.event_id, CAST(r.filter AS text),
        r.matched, r.sent, r.cursor_done, r.created_at, r.cancelled_at,
        CAST(count(*) FILTER (WHERE d.status = 'delivered') AS integer),
        CAST(count(*) FILTER (WHERE d.status = 'dead') AS integer),
        CAST(count(*) FILTER (WHERE d.status = 'pending') AS integer),
        max(d.finished_at)
        """
}

extension AuditEntry {
    /// What `init(row:)` reads of `audit_log`, in order.
    public static let columns = """
        id, at, actor_token_id, actor_name, actor_role, action, target, CAST(filter AS text), matched, reason
        """
}

extension SecurityEventRecord {
    /// What `init(row:)` reads of `security_events`, in order.
    public static let columns = """
        number, issuer, jti, event_type, issued_at, received_at, subject, disposition, note, verification_state, event_id
        """
}

extension DeliveryAttempt {
    /// What `init(row:)` reads of `delivery_attempts a`, in order.
    public static let columns = "a.started_at, a.duration_ms, a.status_code, a.error_kind, a.error, a.response_head"
}

extension DeliveryRecord {
    /// What `init(row:)` reads of `deliveries`, in order. The first, `id`, is the stores': they
    /// find the delivery's attempts by it.
    public static let columns = """
        id, subscription_id, webhook_id, status, created_at, finished_at, CASE WHEN status = 'pending' THEN due_at END, replay_id
        """
}

extension SubscriptionDelivery {
    /// What `init(row:)` reads of a delivery `d` and its event `e`, in order.
    public static let columns = """
        d.id, d.event_id, d.user_id, e.type, d.sequence, d.replay_id, d.webhook_id, d.status, d.attempts,
        d.created_at, d.finished_at, CASE WHEN d.status = 'pending' THEN d.due_at END,
        (SELECT a.status_code FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.id DESC LIMIT 1)
        """
}

extension Subscription {
    /// What `init(row:)` reads of `subscriptions`, in order; `seq`, last, is a list's cursor.
    public static let columns = """
        id, owner_token_id, url, event_types, description, ordered, enabled, disabled_reason,
        created_at, updated_at, last_success_at, failing_since, seq
        """
}

extension SecurityEventStream {
    /// What `init(row:)` reads of `set_stream`, in order.
    public static let columns = """
        stream_id, delivery, endpoint_url, configuration, status, status_reason, status_checked_at, verification_state,
        verification_requested_at, verification_outcome, verification_elapsed_ms, created_at, updated_at
        """
}

extension StoredEvent {
    /// What a list of events reads of `events e`, in the order `init(summaryRow:)` reads it.
    public static let summaryColumns = """
        e.id, e.type, e.user_id, e.sequence, e.occurred_at, e.received_at, e.status, e.status_reason,
        e.decided_at, e.verified_at, e.pruned_at, e.reason
        """

    /// A list's columns, then the provider's answer, the source and the path: what `init(row:)` reads.
    public static let columns = summaryColumns + ", e.provider_user_id, e.provider_phone_number, e.source, e.path"
}
