import EchoRelayCore
import EchoRelaySQL
import PostgresNIO

extension PostgresEventStore: ReplayStore {
    public func replayEvent(id: String, subscriptionIDs: [String]?, actor: Principal, reason: String) async throws -> ReplayReceipt {
        try await transaction { connection in
            // Lock the event so its status cannot change under the replay.
            var found: (String, String)?
            for try await row in try await connection.query(
                "SELECT status, type FROM events WHERE id = \(id) FOR SHARE", logger: logger
            ).decode((String, String).self) { found = row }
            guard let (status, type) = found else { throw ReplayError.eventNotFound }
            guard status == EventStatus.verified.rawValue else {
                throw ReplayError.notVerified(EventStatus(rawValue: status) ?? .pending)
            }

            // Named subscriptions are taken even when disabled (their deliveries wait until
            // enabled); without names, every enabled one that wants this type.
            var targets: [String] = []
            for try await subscriptionID in try await connection.query("""
                SELECT id FROM subscriptions
                WHERE deleted_at IS NULL AND \(type) = ANY (event_types)
                  AND (\(subscriptionIDs)::text[] IS NULL OR id = ANY (\(subscriptionIDs)::text[]))
                  AND (\(subscriptionIDs)::text[] IS NOT NULL OR enabled)
                ORDER BY seq
                """, logger: logger).decode(String.self) { targets.append(subscriptionID) }
            if let named = subscriptionIDs {
                let missing = named.filter { !targets.contains($0) }
                guard missing.isEmpty else { throw ReplayError.unknownSubscriptions(missing) }
            }
            guard !targets.isEmpty else { throw ReplayError.noSubscription(eventType: type) }

            let replayID = "rpl_" + RandomID.make()
            try await connection.query("""
                INSERT INTO replays (id, kind, actor_name, actor_role, reason, event_id, matched, sent, cursor_done)
                VALUES (\(replayID), 'event', \(actor.name), \(actor.role.rawValue), \(reason), \(id),
                        \(targets.count), \(targets.count), true)
                """, logger: logger)
            try await connection.query("""
                INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, replay_id)
                SELECT e.id, s, e.user_id, e.sequence, \(unescaped: WebhookIDSQL.expression(eventID: "e.id", subscriptionID: "s")), \(replayID)
                FROM events e, unnest(\(targets)::text[]) AS s
                WHERE e.id = \(id)
                """, logger: logger)
            try await Self.audit(on: connection, logger: logger, actor: actor, action: "event.replay", target: id,
                                 filter: subscriptionIDs.map { .object(["subscription_ids": .array($0.map(JSONValue.string))]) },
                                 matched: targets.count, reason: reason)
            return ReplayReceipt(id: replayID, eventID: id, subscriptionIDs: targets, matched: targets.count)
        }
    }

    /// The original deliveries a bulk replay's filter (the jsonb `f.filter`) matches: of
    /// non-deleted subscriptions, enabled unless named, in a final state unless a status is
    /// named. Shared by the dry run, the count at start and every batch.
    private static let matchingDeliveries = """
        FROM deliveries d
        JOIN events e ON e.id = d.event_id
        JOIN subscriptions s ON s.id = d.subscription_id
        WHERE d.replay_id IS NULL AND s.deleted_at IS NULL
          AND (s.enabled OR f.filter ? 'subscription_id')
          AND (NOT f.filter ? 'user_id' OR d.user_id = f.filter->>'user_id')
          AND (NOT f.filter ? 'subscription_id' OR d.subscription_id = f.filter->>'subscription_id')
          AND (NOT f.filter ? 'types' OR e.type IN (SELECT jsonb_array_elements_text(f.filter->'types')))
          AND (NOT f.filter ? 'since' OR e.received_at >= (f.filter->>'since')::timestamptz)
          AND (NOT f.filter ? 'until' OR e.received_at < (f.filter->>'until')::timestamptz)
          AND (CASE WHEN f.filter ? 'status' THEN d.status = f.filter->>'status' ELSE d.status <> 'pending' END)
        """

    public func countReplay(_ filter: ReplayFilter) async throws -> Int {
        try await wrapped {
            let filterText = String(decoding: filter.json.canonicalEncoding(), as: UTF8.self)
            let rows = try await client.query("""
                WITH f AS (SELECT \(filterText)::jsonb AS filter)
                SELECT count(*)::bigint FROM f, LATERAL (SELECT 1 \(unescaped: Self.matchingDeliveries)) m
                """, logger: logger)
            for try await count in rows.decode(Int64.self) { return Int(count) }
            return 0
        }
    }

    public func startReplay(_ filter: ReplayFilter, actor: Principal, reason: String) async throws -> Replay {
        let filterText = String(decoding: filter.json.canonicalEncoding(), as: UTF8.self)
        let id = "rpl_" + RandomID.make()
        try await transaction { connection in
            // The count and the upper bound on delivery ids come from one snapshot, so the
            // batches send exactly the deliveries counted (less any that stop matching).
            try await connection.query("""
                WITH f AS (SELECT \(filterText)::jsonb AS filter),
                m AS (SELECT count(*)::integer AS matched, max(d.id) AS max_id FROM f, LATERAL (SELECT d.id \(unescaped: Self.matchingDeliveries)) d)
                INSERT INTO replays (id, kind, actor_name, actor_role, reason, filter, matched, max_delivery_id, cursor_done)
                SELECT \(id), 'bulk', \(actor.name), \(actor.role.rawValue), \(reason), f.filter, m.matched, m.max_id, m.matched = 0
                FROM f, m
                """, logger: logger)
            let matched = try await connection.query("SELECT matched FROM replays WHERE id = \(id)", logger: logger)
                .decode(Int.self).gathered().first ?? 0
            // Refused, and the transaction with it: a replay that sends nothing is no replay.
            guard matched > 0 else { throw ReplayError.nothingMatched }
            try await Self.audit(on: connection, logger: logger, actor: actor, action: "replay.start", target: id,
                                 filter: filter.json, matched: matched, reason: reason)
        }
        guard let replay = try await replay(id: id) else { throw StoreError.unexpected("replay \(id) vanished") }
        return replay
    }

    public func advanceReplays(limit: Int) async throws -> Int? {
        try await transaction { connection -> Int? in
            // One replay at a time, oldest first; SKIP LOCKED lets another process take the next.
            let candidates = try await (try await connection.query("""
                SELECT id, kind FROM replays WHERE state = 'running' AND NOT cursor_done
                ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED
                """, logger: logger)).decode((String, String).self).gathered()
            guard let (id, kind) = candidates.first else { return nil }

            // The next batch after the cursor, in (user, sequence, subscription) order, so a
            // user's replayed deliveries are queued oldest first and the order rule holds them.
            let created = kind == ReplayKind.recover.rawValue
                ? try await Self.recoverBatch(replayID: id, limit: limit, on: connection, logger: logger)
                : try await (try await connection.query("""
                WITH f AS (SELECT filter, max_delivery_id, cursor_user_id, cursor_sequence, cursor_subscription_id
                           FROM replays WHERE id = \(id)),
                picked AS (
                    SELECT d.event_id, d.subscription_id, d.user_id, d.sequence, d.webhook_id
                    FROM f, LATERAL (SELECT d.* \(unescaped: Self.matchingDeliveries)
                                     AND d.id <= f.max_delivery_id
                                     AND (f.cursor_user_id IS NULL OR (d.user_id, d.sequence, d.subscription_id)
                                          > (f.cursor_user_id, f.cursor_sequence, f.cursor_subscription_id))
                                     ORDER BY d.user_id, d.sequence, d.subscription_id
                                     LIMIT \(limit)) d
                ), inserted AS (
                    INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, replay_id)
                    SELECT event_id, subscription_id, user_id, sequence, webhook_id, \(id) FROM picked
                    RETURNING user_id, sequence, subscription_id
                )
                SELECT user_id, sequence, subscription_id FROM inserted
                ORDER BY user_id DESC, sequence DESC, subscription_id DESC
                """, logger: logger)).decode((String, Int64, String).self).gathered()

            let last = created.first
            try await connection.query("""
                UPDATE replays
                SET sent = sent + \(created.count),
                    cursor_user_id = coalesce(\(last?.0), cursor_user_id),
                    cursor_sequence = coalesce(\(last?.1), cursor_sequence),
                    cursor_subscription_id = coalesce(\(last?.2), cursor_subscription_id),
                    cursor_done = \(created.count < limit)
                WHERE id = \(id)
                """, logger: logger)
            return created.count
        }
    }

    /// The events a recover (the jsonb `f.filter`, received before `f.bound`) sends: verified,
    /// of the subscription's types, with no delivery to it delivered or pending. The two probes
    /// are split by `replay_id` so each has its partial unique index.
    private static let recoverableEvents = """
        FROM subscriptions s
        JOIN events e ON e.type = ANY (s.event_types)
        WHERE s.id = f.filter->>'subscription_id' AND s.deleted_at IS NULL AND e.status = 'verified' AND e.pruned_at IS NULL
          AND e.received_at >= (f.filter->>'since')::timestamptz
          AND e.received_at < least(coalesce((f.filter->>'until')::timestamptz, 'infinity'), f.bound)
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.subscription_id = s.id
                          AND d.replay_id IS NULL AND d.status IN ('delivered', 'pending'))
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.subscription_id = s.id
                          AND d.replay_id IS NOT NULL AND d.status IN ('delivered', 'pending'))
        """

    public func countRecovery(_ recovery: Recovery) async throws -> Int? {
        try await wrapped {
            let filterText = String(decoding: recovery.json.canonicalEncoding(), as: UTF8.self)
            let rows = try await client.query("""
                WITH f AS (SELECT \(filterText)::jsonb AS filter, now() AS bound)
                SELECT (SELECT count(*) FROM subscriptions WHERE id = \(recovery.subscriptionID) AND deleted_at IS NULL),
                       (SELECT count(*) FROM f, LATERAL (SELECT 1 \(unescaped: Self.recoverableEvents)) m)
                """, logger: logger)
            for try await (found, count) in rows.decode((Int64, Int64).self) { return found == 0 ? nil : Int(count) }
            return nil
        }
    }

    public func startRecovery(_ recovery: Recovery, actor: Principal, reason: String) async throws -> Replay? {
        let filterText = String(decoding: recovery.json.canonicalEncoding(), as: UTF8.self)
        let id = "rpl_" + RandomID.make()
        let found: Bool = try await transaction { connection in
            // FOR SHARE keeps the subscription from being deleted under the count.
            let exists = try await (try await connection.query("""
                SELECT 1 FROM subscriptions WHERE id = \(recovery.subscriptionID) AND deleted_at IS NULL FOR SHARE
                """, logger: logger)).decode(Int.self).gathered()
            guard !exists.isEmpty else { return false }
            // created_at is now(), the bound of every batch: what arrives later is delivered
            // the usual way.
            let matched = try await (try await connection.query("""
                WITH f AS (SELECT \(filterText)::jsonb AS filter, now() AS bound),
                m AS (SELECT count(*)::integer AS matched FROM f, LATERAL (SELECT 1 \(unescaped: Self.recoverableEvents)) e)
                INSERT INTO replays (id, kind, actor_name, actor_role, reason, filter, matched, cursor_done)
                SELECT \(id), 'recover', \(actor.name), \(actor.role.rawValue), \(reason), f.filter, m.matched, m.matched = 0
                FROM f, m
                RETURNING matched
                """, logger: logger)).decode(Int.self).gathered().first ?? 0
            guard matched > 0 else { throw ReplayError.nothingToRecover }
            try await Self.audit(on: connection, logger: logger, actor: actor, action: "subscription.recover", target: id,
                                 filter: recovery.json, matched: matched, reason: reason)
            return true
        }
        guard found else { return nil }
        guard let replay = try await replay(id: id) else { throw StoreError.unexpected("replay \(id) vanished") }
        return replay
    }

    /// A recover's next batch after its cursor, in (user, sequence) order; returns what it
    /// created, last first, as the bulk batch does.
    private static func recoverBatch(
        replayID id: String, limit: Int, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(String, Int64, String)] {
        try await (try await connection.query("""
            WITH f AS (SELECT filter, created_at AS bound, cursor_user_id, cursor_sequence FROM replays WHERE id = \(id)),
            picked AS (
                SELECT p.* FROM f, LATERAL (SELECT e.id AS event_id, s.id AS subscription_id, e.user_id, e.sequence
                                            \(unescaped: recoverableEvents)
                                            AND (f.cursor_user_id IS NULL OR (e.user_id, e.sequence) > (f.cursor_user_id, f.cursor_sequence))
                                            ORDER BY e.user_id, e.sequence
                                            LIMIT \(limit)) p
            ), inserted AS (
                INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, replay_id)
                SELECT event_id, subscription_id, user_id, sequence,
                       \(unescaped: WebhookIDSQL.expression(eventID: "event_id", subscriptionID: "subscription_id")), \(id)
                FROM picked
                RETURNING user_id, sequence, subscription_id
            )
            SELECT user_id, sequence, subscription_id FROM inserted
            ORDER BY user_id DESC, sequence DESC
            """, logger: logger)).decode((String, Int64, String).self).gathered()
    }

    public func replay(id: String) async throws -> Replay? {
        try await rows("""
            SELECT \(unescaped: Replay.columns)
            FROM replays r LEFT JOIN deliveries d ON d.replay_id = r.id
            WHERE r.id = \(id)
            GROUP BY r.id
            """, Replay.init(row:)).first
    }

    public func cancelReplay(id: String, actor: Principal, reason: String) async throws -> Replay? {
        let found: Bool = try await transaction { connection in
            let current = try await (try await connection.query(
                "SELECT state FROM replays WHERE id = \(id) FOR UPDATE", logger: logger
            )).decode(String.self).gathered()
            guard let state = current.first else { return false }
            if state == "cancelled" { throw ReplayError.finished(.cancelled) }
            let pending = try await (try await connection.query(
                "SELECT count(*)::integer FROM deliveries WHERE replay_id = \(id) AND status = 'pending'", logger: logger
            )).decode(Int.self).gathered().first ?? 0
            let done = try await connection.query("SELECT cursor_done FROM replays WHERE id = \(id)", logger: logger)
                .decode(Bool.self).gathered().first ?? false
            if done && pending == 0 { throw ReplayError.finished(.completed) }

            try await connection.query("""
                UPDATE replays SET state = 'cancelled', cancelled_at = now() WHERE id = \(id)
                """, logger: logger)
            // Deliveries in flight finish; the rest are cancelled.
            let cancelled = try await (try await connection.query("""
                UPDATE deliveries SET status = 'cancelled', finished_at = now()
                WHERE replay_id = \(id) AND status = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at <= now())
                RETURNING id
                """, logger: logger)).collect().count
            try await Self.audit(on: connection, logger: logger, actor: actor, action: "replay.cancel", target: id,
                                 filter: nil, matched: cancelled, reason: reason)
            return true
        }
        return found ? try await replay(id: id) : nil
    }

    public func reverify(eventID: String, proof: VerificationProof, actor: Principal, reason: String) async throws {
        let (echo, oauth2) = proof.columns
        try await transaction { connection in
            let current = try await (try await connection.query(
                "SELECT status FROM events WHERE id = \(eventID) FOR UPDATE", logger: logger
            )).decode(String.self).gathered()
            guard let status = current.first else { throw ReplayError.eventNotFound }
            guard status == EventStatus.unverifiable.rawValue else {
                throw ReplayError.notUnverifiable(EventStatus(rawValue: status) ?? .pending)
            }
            try await connection.query("""
                UPDATE events
                SET status = 'pending', status_reason = NULL, decided_at = NULL,
                    echo_service_provider = \(echo?.serviceProvider), echo_authorization = \(echo?.authorization.revealed),
                    oauth2_access_token = \(oauth2?.accessToken.revealed), path = \(proof.path.rawValue)
                WHERE id = \(eventID)
                """, logger: logger)
            try await connection.query(
                "INSERT INTO work_items (kind, event_id, user_id) SELECT 'verify', id, user_id FROM events WHERE id = \(eventID)",
                logger: logger)
            try await Self.audit(on: connection, logger: logger, actor: actor, action: "event.reverify", target: eventID,
                                 filter: nil, matched: 1, reason: reason)
        }
    }
}

extension PostgresEventStore: AuditStore {
    static func audit(
        on connection: PostgresConnection, logger: Logger, actor: Principal, action: String, target: String?,
        filter: JSONValue?, matched: Int?, reason: String?
    ) async throws {
        let filterText = filter.map { String(decoding: $0.canonicalEncoding(), as: UTF8.self) }
        try await connection.query("""
            INSERT INTO audit_log (actor_token_id, actor_name, actor_role, action, target, filter, matched, reason)
            VALUES (\(actor.tokenID), \(actor.name), \(actor.role.rawValue), \(action), \(target), \(filterText)::jsonb,
                    \(matched), \(reason))
            """, logger: logger)
    }

    /// The entry of a change, if it has one, on the change's connection (in its transaction).
    static func audit(on connection: PostgresConnection, logger: Logger, _ note: AuditNote?, target: String) async throws {
        guard let note else { return }
        try await audit(on: connection, logger: logger, actor: note.actor, action: note.action, target: target,
                        filter: nil, matched: nil, reason: note.reason)
    }

    public func recordAudit(actor: Principal, action: String, target: String?, filter: JSONValue?, matched: Int?, reason: String?) async throws {
        try await wrapped {
            try await client.withConnection { connection in
                try await Self.audit(on: connection, logger: logger, actor: actor, action: action, target: target,
                                     filter: filter, matched: matched, reason: reason)
            }
        }
    }

    public func auditEntries(_ query: AuditQuery) async throws -> [AuditEntry] {
        try await rows("""
            SELECT \(unescaped: AuditEntry.columns)
            FROM audit_log
            WHERE (\(query.action)::text IS NULL OR action = \(query.action))
              AND (\(query.actorName)::text IS NULL OR actor_name = \(query.actorName))
              AND (\(query.target)::text IS NULL OR target = \(query.target))
              AND (\(query.since)::timestamptz IS NULL OR at >= \(query.since))
              AND (\(query.until)::timestamptz IS NULL OR at < \(query.until))
              AND (\(query.beforeID)::bigint IS NULL OR id < \(query.beforeID))
            ORDER BY id DESC LIMIT \(query.limit)
            """, AuditEntry.init(row:))
    }
}
