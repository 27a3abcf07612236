import EchoRelayCore
import EchoRelaySQL

extension SQLiteEventStore {
    /// A delivery row to create: the original one of a verified event, or a replayed one.
    struct NewDelivery {
        var eventID: String
        var subscriptionID: String
        var userID: String
        var sequence: Int64
        var webhookID: String
        var replayID: String?
    }

    /// Creates one delivery per enabled subscription that wants this event's type. Runs in
    /// the verification transaction, so a verified event never lacks its deliveries.
    static func fanOut(_ task: VerificationTask, db: SQLiteDB) async throws {
        let subscriptions = try await db.rows("""
            SELECT id FROM subscriptions
            WHERE enabled = 1 AND deleted_at IS NULL AND EXISTS (SELECT 1 FROM json_each(event_types) WHERE value = ?1)
            ORDER BY seq
            """, [task.type.rawValue]).map { try $0.string(0) }
        try await insertDeliveries(subscriptions.map { subscriptionID in
            NewDelivery(eventID: task.eventID, subscriptionID: subscriptionID, userID: task.userID, sequence: task.sequence,
                        webhookID: WebhookID.make(eventID: task.eventID, subscriptionID: subscriptionID), replayID: nil)
        }, db: db)
    }

    /// Inserts deliveries, due now unless they must wait behind an earlier one (parked), a
    /// few hundred per statement. An original delivery that exists already is left as it is.
    static func insertDeliveries(_ deliveries: [NewDelivery], db: SQLiteDB) async throws {
        for start in stride(from: 0, to: deliveries.count, by: 500) {
            let chunk = deliveries[start..<min(start + 500, deliveries.count)]
            // Numbered parameters throughout: ?1 is now, then six per row.
            var binds: [any SQLiteBind] = [db.now]
            var tuples: [String] = []
            for delivery in chunk {
                let first = binds.count + 1
                tuples.append("(" + (first..<first + 6).map { "?\($0)" }.joined(separator: ", ") + ", ?1, ?1)")
                binds += [delivery.eventID, delivery.subscriptionID, delivery.userID, delivery.sequence,
                          delivery.webhookID, delivery.replayID]
            }
            let values = tuples.joined(separator: ", ")
            let inserted = try await db.rows("""
                INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id, replay_id, due_at, created_at)
                VALUES \(values)
                ON CONFLICT (event_id, subscription_id) WHERE replay_id IS NULL DO NOTHING
                RETURNING id
                """, binds).map { try $0.int64(0) }
            try await parkBlocked(ids: inserted, db: db)
        }
    }

    public func claimDeliveries(owner: String, limit: Int, lease: Duration, perSubscriptionCap: Int,
                                answered: [Int64]) async throws -> [DeliveryTask] {
        try await session.write { db in
            // Each enabled subscription's due deliveries in due order, read from its front:
            // only heads are due, so this never reads the backlog parked behind them. Those
            // still blocked (made due by a replay or a redrive) are parked here. Each takes up
            // to its cap minus what it has in flight (leased, less what this process has
            // answered and not yet recorded); first tries go before retries.
            let open = try await db.rows("""
                SELECT s.id, ?2 - (SELECT count(*) FROM deliveries b
                                   WHERE b.subscription_id = s.id AND b.status = 'pending'
                                     AND b.lease_owner IS NOT NULL AND b.lease_expires_at > ?1
                                     AND b.id NOT IN (SELECT value FROM json_each(?3)))
                FROM subscriptions s WHERE s.enabled = 1 AND s.deleted_at IS NULL
                """, [db.now, perSubscriptionCap, JSONText(.array(answered.map(JSONValue.integer)))]).map { (try $0.string(0), try $0.int(1)) }
            var candidates: [(id: Int64, retry: Bool, dueAt: Int64)] = []
            var blocked: [Int64] = []
            for (subscriptionID, room) in open where room > 0 {
                var taken = 0
                for row in try await db.rows("""
                    SELECT d.id, d.attempts > 0, d.due_at, \(Self.blocked)
                    FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
                    WHERE d.subscription_id = ?1 AND d.status = 'pending' AND d.parked_at IS NULL AND d.due_at <= ?2
                    ORDER BY d.due_at LIMIT ?3
                    """, [subscriptionID, db.now, room + 32]) {
                    if try row.int(3) != 0 {
                        blocked.append(try row.int64(0))
                    } else {
                        candidates.append((try row.int64(0), try row.int(1) != 0, try row.int64(2)))
                        taken += 1
                    }
                }
                // First tries before retries within the subscription, then its cap.
                let mine = candidates.suffix(taken).sorted { ($0.retry ? 1 : 0, $0.dueAt) < ($1.retry ? 1 : 0, $1.dueAt) }
                candidates.removeLast(taken)
                candidates += mine.prefix(room)
            }
            if !blocked.isEmpty {
                try await db.run("UPDATE deliveries SET parked_at = ?1 WHERE id IN (SELECT value FROM json_each(?2))",
                                 [db.now, JSONText(.array(blocked.map(JSONValue.integer)))])
            }
            let chosen = candidates.sorted { ($0.retry ? 1 : 0, $0.dueAt, $0.id) < ($1.retry ? 1 : 0, $1.dueAt, $1.id) }
                .prefix(limit).map(\.id)
            guard !chosen.isEmpty else { return [] }
            let ids = JSONText(.array(chosen.map(JSONValue.integer)))
            let leaseEnd = db.now + lease.microseconds
            try await db.run("""
                UPDATE deliveries SET lease_owner = ?1, lease_expires_at = ?2, due_at = ?2, attempts = attempts + 1
                WHERE id IN (SELECT value FROM json_each(?3))
                """, [owner, leaseEnd, ids])
            let rows = try await db.rows("""
                SELECT d.id, d.event_id, d.subscription_id, d.webhook_id, d.attempts, s.url, s.secret,
                       CASE WHEN s.previous_secret_expires_at > ?1 THEN s.previous_secret END,
                       e.type, e.user_id, e.sequence, e.occurred_at, coalesce(e.verified_at, e.decided_at, ?1),
                       e.provider_phone_number,
                       (SELECT p.provider_phone_number FROM events p
                        WHERE p.user_id = e.user_id AND p.sequence < e.sequence AND p.status = 'verified'
                        ORDER BY p.sequence DESC LIMIT 1),
                       d.replay_id, (SELECT r.created_at FROM replays r WHERE r.id = d.replay_id), e.reason
                FROM deliveries d JOIN events e ON e.id = d.event_id JOIN subscriptions s ON s.id = d.subscription_id
                WHERE d.id IN (SELECT value FROM json_each(?2))
                """, [db.now, ids])
            var tasks: [Int64: DeliveryTask] = [:]
            for row in rows {
                let deliveryID = try row.int64(0), eventID = try row.string(1)
                guard let type = EventType(rawValue: try row.string(8)) else {
                    throw StoreError.unexpected("event \(eventID) has an unknown type")
                }
                let replayID = try row.optionalString(15), replayAt = try row.optionalDate(16)
                tasks[deliveryID] = DeliveryTask(
                    deliveryID: deliveryID, eventID: eventID, subscriptionID: try row.string(2), webhookID: try row.string(3),
                    url: try row.string(5), secrets: try SecretSealer.signingSecrets(try row.string(6), try row.optionalString(7), subscriptionID: try row.string(2), with: sealer),
                    attempts: try row.int(4), type: type, userID: try row.string(9), sequence: try row.int64(10),
                    occurredAt: try row.date(11), verifiedAt: try row.date(12), phoneNumber: try row.optionalString(13),
                    previousPhoneNumber: try row.optionalString(14), replay: replayID.flatMap { id in replayAt.map { DeliveryReplay(id: id, at: $0) } },
                    reason: try row.optionalString(17)
                )
            }
            return chosen.compactMap { tasks[$0] }
        }
    }

    /// The embedded store hands nothing off yet (see `finishVerification`).
    public func recordDeliveryAttempts(
        _ records: [AttemptRecord], owner: String, disableAfter: Duration, handOff: HandOff?, perSubscriptionCap: Int
    ) async -> [Result<FinishedWork, any Error>] {
        let attempts = records.map { RecordedAttempt($0, owner: owner, disableAfter: disableAfter, handOff: handOff, cap: perSubscriptionCap) }
        do {
            return try await writeAttempts(within: .seconds(60)) { attempts }
        } catch {
            return records.map { _ in .failure(error) }
        }
    }

    /// One transaction for the batch (see `writeBatch`).
    public func writeAttempts(
        within limit: Duration, take: @escaping @Sendable () -> [RecordedAttempt]
    ) async throws -> [Result<FinishedWork, any Error>] {
        try await Self.writeBatch("delivery attempts", take: take, session: session, logger: logger) { attempts, db in
            var results: [Result<FinishedWork, any Error>] = []
            for attempt in attempts { results.append(.success(FinishedWork(kept: try await Self.record(attempt, db: db)))) }
            return results
        }
    }

    /// Nothing is handed off in the embedded store, so nothing is leased this way.
    public func leasedDeliveries(ids: [Int64], owner: String) async throws -> [DeliveryTask] {
        []
    }

    /// Records one attempt in the transaction of `db`: false if the lease was lost.
    private static func record(_ record: RecordedAttempt, db: SQLiteDB) async throws -> Bool {
        let task = record.task, attempt = record.attempt, next = record.next, owner = record.owner, disableAfter = record.disableAfter
        let status = next.status.rawValue, delay = next.retryDelay
        let updated = try await db.rows("""
            UPDATE deliveries
            SET status = ?1, due_at = ?2, lease_owner = NULL, lease_expires_at = NULL,
                finished_at = CASE WHEN ?1 = 'pending' THEN NULL ELSE ?3 END
            WHERE id = ?4 AND lease_owner = ?5 AND status = 'pending'
            RETURNING id
            """, [status, db.now + delay.microseconds, db.now, task.deliveryID, owner]).count
        guard updated == 1 else { return false }
        if next.status != .pending {
            // Final now: the next delivery of its queue may go, if it was parked behind it.
            try await Self.unparkHeads(userID: task.userID, subscriptionID: task.subscriptionID, db: db)
        }

        let milliseconds = Int(Double(attempt.duration.microseconds) / 1000)
        try await db.run("""
            INSERT INTO delivery_attempts (delivery_id, started_at, duration_ms, status_code, error_kind, error, response_head)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            """, [task.deliveryID, attempt.startedAt, milliseconds, attempt.statusCode, attempt.errorKind?.rawValue,
                  attempt.error, attempt.responseHead])

        switch next {
        case .delivered:
            try await db.run(
                "UPDATE subscriptions SET last_success_at = ?1, failing_since = NULL WHERE id = ?2",
                [db.now, task.subscriptionID]
            )
        case .dead(let disable?):
            try await db.run(
                "UPDATE subscriptions SET enabled = 0, disabled_reason = ?1, updated_at = ?2 WHERE id = ?3",
                [disable, db.now, task.subscriptionID]
            )
        case .retry, .dead(nil):
            // A subscription whose deliveries have all failed for `disableAfter` is disabled.
            // (SET reads the old failing_since, as in PostgreSQL.)
            try await db.run("""
                UPDATE subscriptions
                SET failing_since = coalesce(failing_since, ?1),
                    enabled = CASE WHEN failing_since < ?1 - ?2 THEN 0 ELSE enabled END,
                    disabled_reason = CASE WHEN failing_since < ?1 - ?2
                                           THEN 'every delivery has failed since '
                                                || strftime('%Y-%m-%dT%H:%M:%SZ', failing_since / 1000000, 'unixepoch')
                                           ELSE disabled_reason END
                WHERE id = ?3
                """, [db.now, disableAfter.microseconds, task.subscriptionID])
        }
        return true
    }

    public func releaseDeliveries(ids: [Int64], owner: String) async throws {
        guard !ids.isEmpty else { return }
        try await session.read { db in
            try await db.run("""
                UPDATE deliveries
                SET due_at = ?1, lease_owner = NULL, lease_expires_at = NULL, attempts = max(attempts - 1, 0)
                WHERE id IN (SELECT value FROM json_each(?2)) AND lease_owner = ?3 AND status = 'pending'
                """, [db.now, JSONText(.array(ids.map(JSONValue.integer))), owner])
        }
    }

    public func deliveries(eventID: String) async throws -> [DeliveryRecord] {
        try await session.read { db in
            var records: [Int64: DeliveryRecord] = [:]
            var order: [Int64] = []
            for row in try await db.rows("SELECT \(DeliveryRecord.columns) FROM deliveries WHERE event_id = ?1 ORDER BY id", [eventID]) {
                let id = try row.int64(0)
                records[id] = try DeliveryRecord(row: row)
                order.append(id)
            }
            for row in try await db.rows("""
                SELECT \(DeliveryAttempt.columns), a.delivery_id
                FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
                WHERE d.event_id = ?1 ORDER BY a.id
                """, [eventID]) {
                records[try row.int64(6)]?.attempts.append(try DeliveryAttempt(row: row))
            }
            return order.compactMap { records[$0] }
        }
    }
}
