import EchoRelayCore
import EchoRelaySQL
import Foundation

extension SQLiteEventStore {
    public func replayEvent(id: String, subscriptionIDs: [String]?, actor: Principal, reason: String) async throws -> ReplayReceipt {
        try await session.write { db in
            // The write lock keeps the event's status from changing under the replay.
            guard let event = try await db.row("SELECT status, type, user_id, sequence FROM events WHERE id = ?1", [id]) else {
                throw ReplayError.eventNotFound
            }
            let status = try event.string(0)
            guard status == EventStatus.verified.rawValue else {
                throw ReplayError.notVerified(EventStatus(rawValue: status) ?? .pending)
            }

            // Named subscriptions are taken even when disabled (their deliveries wait until
            // enabled); without names, every enabled one that wants this type.
            let targets = try await db.rows("""
                SELECT id FROM subscriptions
                WHERE deleted_at IS NULL AND EXISTS (SELECT 1 FROM json_each(event_types) WHERE value = ?1)
                  AND (?2 IS NULL OR id IN (SELECT value FROM json_each(?2)))
                  AND (?2 IS NOT NULL OR enabled = 1)
                ORDER BY seq
                """, [try event.string(1), subscriptionIDs.map { JSONText($0) }]).map { try $0.string(0) }
            if let named = subscriptionIDs {
                let missing = named.filter { !targets.contains($0) }
                guard missing.isEmpty else { throw ReplayError.unknownSubscriptions(missing) }
            }
            guard !targets.isEmpty else { throw ReplayError.noSubscription(eventType: try event.string(1)) }

            let replayID = "rpl_" + RandomID.make()
            try await db.run("""
                INSERT INTO replays (id, kind, actor_name, actor_role, reason, event_id, matched, sent, cursor_done, created_at)
                VALUES (?1, 'event', ?2, ?3, ?4, ?5, ?6, ?6, 1, ?7)
                """, [replayID, actor.name, actor.role.rawValue, reason, id, targets.count, db.now])
            let userID = try event.string(2), sequence = try event.int64(3)
            try await Self.insertDeliveries(targets.map { subscriptionID in
                NewDelivery(eventID: id, subscriptionID: subscriptionID, userID: userID, sequence: sequence,
                            webhookID: WebhookID.make(eventID: id, subscriptionID: subscriptionID), replayID: replayID)
            }, db: db)
            try await Self.audit(db, actor: actor, action: "event.replay", target: id,
                                 filter: subscriptionIDs.map { .object(["subscription_ids": .array($0.map(JSONValue.string))]) },
                                 matched: targets.count, reason: reason)
            return ReplayReceipt(id: replayID, eventID: id, subscriptionIDs: targets, matched: targets.count)
        }
    }

    public func countReplay(_ filter: ReplayFilter) async throws -> Int {
        let matching = ReplayMatch(filter.json)
        return try await session.read { db in
            try await db.row("SELECT count(*) \(matching.sql)", matching.binds)?.int(0) ?? 0
        }
    }

    public func startReplay(_ filter: ReplayFilter, actor: Principal, reason: String) async throws -> Replay {
        let id = "rpl_" + RandomID.make()
        let matching = ReplayMatch(filter.json)
        try await session.write { db in
            // The count and the upper bound on delivery ids come from one transaction, so the
            // batches send exactly the deliveries counted (less any that stop matching).
            let counted = try await db.row("SELECT count(*), max(d.id) \(matching.sql)", matching.binds)
            let matched = try counted?.int(0) ?? 0
            // A replay that sends nothing is no replay: refused before anything is written.
            guard matched > 0 else { throw ReplayError.nothingMatched }
            let maxID = try counted?.optionalInt64(1)
            try await db.run("""
                INSERT INTO replays (id, kind, actor_name, actor_role, reason, filter, matched, max_delivery_id, cursor_done, created_at)
                VALUES (?1, 'bulk', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                """, [id, actor.name, actor.role.rawValue, reason, JSONText(filter.json), matched, maxID, matched == 0, db.now])
            try await Self.audit(db, actor: actor, action: "replay.start", target: id, filter: filter.json,
                                 matched: matched, reason: reason)
        }
        guard let replay = try await replay(id: id) else { throw StoreError.unexpected("replay \(id) vanished") }
        return replay
    }

    public func advanceReplays(limit: Int) async throws -> Int? {
        try await session.write { db -> Int? in
            // One replay at a time, oldest first.
            guard let replay = try await db.row("""
                SELECT id, kind, filter, created_at, max_delivery_id, cursor_user_id, cursor_sequence, cursor_subscription_id
                FROM replays WHERE state = 'running' AND cursor_done = 0
                ORDER BY created_at, rowid LIMIT 1
                """) else { return nil }
            let id = try replay.string(0)
            let filter = try replay.optionalJSON(2) ?? .object([:])
            let cursor: [any SQLiteBind] = [try replay.optionalString(5), try replay.optionalInt64(6), try replay.optionalString(7)]

            // The next batch after the cursor, in (user, sequence, subscription) order, so a
            // user's replayed deliveries are queued oldest first and the order rule holds them.
            let deliveries: [NewDelivery]
            if try replay.string(1) == ReplayKind.recover.rawValue {
                let matching = RecoverMatch(filter, startedAt: try replay.int64(3))
                deliveries = try await db.rows("""
                    SELECT e.id, s.id, e.user_id, e.sequence \(RecoverMatch.sql)
                      AND (?4 IS NULL OR (e.user_id, e.sequence) > (?4, ?5))
                    ORDER BY e.user_id, e.sequence
                    LIMIT ?6
                    """, matching.binds + Array(cursor.prefix(2)) + [limit]).map { row in
                    let eventID = try row.string(0), subscriptionID = try row.string(1)
                    return NewDelivery(eventID: eventID, subscriptionID: subscriptionID, userID: try row.string(2),
                                       sequence: try row.int64(3), webhookID: WebhookID.make(eventID: eventID, subscriptionID: subscriptionID),
                                       replayID: id)
                }
            } else {
                let matching = ReplayMatch(filter)
                let base = matching.binds.count
                deliveries = try await db.rows("""
                    SELECT d.event_id, d.subscription_id, d.user_id, d.sequence, d.webhook_id \(matching.sql)
                      AND d.id <= ?\(base + 1)
                      AND (?\(base + 2) IS NULL OR (d.user_id, d.sequence, d.subscription_id) > (?\(base + 2), ?\(base + 3), ?\(base + 4)))
                    ORDER BY d.user_id, d.sequence, d.subscription_id
                    LIMIT ?\(base + 5)
                    """, matching.binds + [try replay.optionalInt64(4)] + cursor + [limit]).map { row in
                    NewDelivery(eventID: try row.string(0), subscriptionID: try row.string(1), userID: try row.string(2),
                                sequence: try row.int64(3), webhookID: try row.string(4), replayID: id)
                }
            }
            try await Self.insertDeliveries(deliveries, db: db)

            let last = deliveries.last
            try await db.run("""
                UPDATE replays
                SET sent = sent + ?1,
                    cursor_user_id = coalesce(?2, cursor_user_id),
                    cursor_sequence = coalesce(?3, cursor_sequence),
                    cursor_subscription_id = coalesce(?4, cursor_subscription_id),
                    cursor_done = ?5
                WHERE id = ?6
                """, [deliveries.count, last?.userID, last?.sequence, last?.subscriptionID, deliveries.count < limit, id])
            return deliveries.count
        }
    }

    public func countRecovery(_ recovery: Recovery) async throws -> Int? {
        try await session.read { db in
            guard try await db.row("SELECT 1 FROM subscriptions WHERE id = ?1 AND deleted_at IS NULL", [recovery.subscriptionID]) != nil
            else { return nil }
            let matching = RecoverMatch(recovery.json, startedAt: SQLiteTime.now())
            return try await db.row("SELECT count(*) \(RecoverMatch.sql)", matching.binds)?.int(0) ?? 0
        }
    }

    public func startRecovery(_ recovery: Recovery, actor: Principal, reason: String) async throws -> Replay? {
        let id = "rpl_" + RandomID.make()
        let found: Bool = try await session.write { db in
            guard try await db.row(
                "SELECT 1 FROM subscriptions WHERE id = ?1 AND deleted_at IS NULL", [recovery.subscriptionID]
            ) != nil else { return false }
            // created_at is the bound of every batch: what arrives later is delivered the usual way.
            let matching = RecoverMatch(recovery.json, startedAt: db.now)
            let matched = try await db.row("SELECT count(*) \(RecoverMatch.sql)", matching.binds)?.int(0) ?? 0
            guard matched > 0 else { throw ReplayError.nothingToRecover }
            try await db.run("""
                INSERT INTO replays (id, kind, actor_name, actor_role, reason, filter, matched, cursor_done, created_at)
                VALUES (?1, 'recover', ?2, ?3, ?4, ?5, ?6, 0, ?7)
                """, [id, actor.name, actor.role.rawValue, reason, JSONText(recovery.json), matched, db.now])
            try await Self.audit(db, actor: actor, action: "subscription.recover", target: id, filter: recovery.json,
                                 matched: matched, reason: reason)
            return true
        }
        guard found else { return nil }
        guard let replay = try await replay(id: id) else { throw StoreError.unexpected("replay \(id) vanished") }
        return replay
    }

    public func replay(id: String) async throws -> Replay? {
        try await session.read { db in
            try await db.row("""
                SELECT \(Replay.columns)
                FROM replays r LEFT JOIN deliveries d ON d.replay_id = r.id
                WHERE r.id = ?1
                GROUP BY r.id
                """, [id]).map(Replay.init(row:))
        }
    }

    public func cancelReplay(id: String, actor: Principal, reason: String) async throws -> Replay? {
        let found: Bool = try await session.write { db in
            guard let current = try await db.row("SELECT state, cursor_done FROM replays WHERE id = ?1", [id]) else { return false }
            if try current.string(0) == "cancelled" { throw ReplayError.finished(.cancelled) }
            let pending = try await db.row(
                "SELECT count(*) FROM deliveries WHERE replay_id = ?1 AND status = 'pending'", [id]
            )?.int(0) ?? 0
            if try current.bool(1), pending == 0 { throw ReplayError.finished(.completed) }

            try await db.run("UPDATE replays SET state = 'cancelled', cancelled_at = ?1 WHERE id = ?2", [db.now, id])
            // Deliveries in flight finish; the rest are cancelled.
            let cancelled = try await db.rows("""
                UPDATE deliveries SET status = 'cancelled', finished_at = ?1
                WHERE replay_id = ?2 AND status = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at <= ?1)
                RETURNING id
                """, [db.now, id]).count
            try await Self.audit(db, actor: actor, action: "replay.cancel", target: id, filter: nil, matched: cancelled,
                                 reason: reason)
            return true
        }
        return found ? try await replay(id: id) : nil
    }

    public func reverify(eventID: String, proof: VerificationProof, actor: Principal, reason: String) async throws {
        let (echo, oauth2) = proof.columns
        try await session.write { db in
            guard let current = try await db.row("SELECT status FROM events WHERE id = ?1", [eventID]) else {
                throw ReplayError.eventNotFound
            }
            let status = try current.string(0)
            guard status == EventStatus.unverifiable.rawValue else {
                throw ReplayError.notUnverifiable(EventStatus(rawValue: status) ?? .pending)
            }
            try await db.run("""
                UPDATE events
                SET status = 'pending', status_reason = NULL, decided_at = NULL,
                    echo_service_provider = ?1, echo_authorization = ?2, oauth2_access_token = ?4, path = ?5
                WHERE id = ?3
                """, [echo?.serviceProvider, echo?.authorization.revealed, eventID, oauth2?.accessToken.revealed, proof.path.rawValue])
            try await db.run(
                "INSERT INTO work_items (kind, event_id, due_at, created_at) VALUES ('verify', ?1, ?2, ?2)", [eventID, db.now]
            )
            try await Self.audit(db, actor: actor, action: "event.reverify", target: eventID, filter: nil, matched: 1,
                                 reason: reason)
        }
    }
}

/// The original deliveries a bulk replay's filter matches: of non-deleted subscriptions,
/// enabled unless named, in a final state unless a status is named. Built from the filter's
/// JSON — as stored with the replay — so the dry run, the count at start and every batch
/// read the same filter. Its parameters are ?1…?n; a caller numbers its own after them.
struct ReplayMatch {
    private(set) var sql = """
        FROM deliveries d
        JOIN events e ON e.id = d.event_id
        JOIN subscriptions s ON s.id = d.subscription_id
        WHERE d.replay_id IS NULL AND s.deleted_at IS NULL
        """
    private(set) var binds: [any SQLiteBind] = []

    init(_ filter: JSONValue) {
        let fields = filter.objectValue ?? [:]
        if fields["subscription_id"] == nil { sql += " AND s.enabled = 1" }
        if let userID = fields["user_id"] { add("d.user_id = ?", userID.stringValue) }
        if let subscriptionID = fields["subscription_id"] { add("d.subscription_id = ?", subscriptionID.stringValue) }
        if let types = fields["types"] { add("e.type IN (SELECT value FROM json_each(?))", JSONText(types)) }
        // since/until are RFC 3339 text in the filter, as PostgreSQL casts them to timestamptz.
        if let since = fields["since"] { add("e.received_at >= ?", since.stringValue.flatMap(RFC3339.parse)) }
        if let until = fields["until"] { add("e.received_at < ?", until.stringValue.flatMap(RFC3339.parse)) }
        if let status = fields["status"] {
            add("d.status = ?", status.stringValue)
        } else {
            sql += " AND d.status <> 'pending'"
        }
    }

    private mutating func add(_ condition: String, _ value: any SQLiteBind) {
        binds.append(value)
        sql += " AND " + condition.replacingOccurrences(of: "?", with: "?\(binds.count)")
    }
}

/// The events a recover sends, as PostgreSQL's `recoverableEvents`: verified, of the
/// subscription's types, received in [since, until) and before the recover started, with no
/// delivery to it delivered or pending. Parameters ?1…?3.
struct RecoverMatch {
    static let sql = """
        FROM subscriptions s
        JOIN events e ON e.type IN (SELECT value FROM json_each(s.event_types))
        WHERE s.id = ?1 AND s.deleted_at IS NULL AND e.status = 'verified' AND e.pruned_at IS NULL
          AND e.received_at >= ?2 AND e.received_at < ?3
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.subscription_id = s.id
                          AND d.replay_id IS NULL AND d.status IN ('delivered', 'pending'))
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.subscription_id = s.id
                          AND d.replay_id IS NOT NULL AND d.status IN ('delivered', 'pending'))
        """
    let binds: [any SQLiteBind]

    /// From the recover's window as stored (`Recovery.json`) and when it started, in
    /// microseconds.
    init(_ filter: JSONValue, startedAt: Int64) {
        let fields = filter.objectValue ?? [:]
        let since = fields["since"]?.stringValue.flatMap(RFC3339.parse).map(SQLiteTime.microseconds) ?? .min
        let until = fields["until"]?.stringValue.flatMap(RFC3339.parse).map(SQLiteTime.microseconds) ?? .max
        binds = [fields["subscription_id"]?.stringValue, since, min(until, startedAt)]
    }
}
