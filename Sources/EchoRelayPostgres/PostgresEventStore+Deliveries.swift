import EchoRelayCore
import Foundation
import Logging
import PostgresNIO

extension PostgresEventStore: DeliveryStore {
    /// Creates one delivery per enabled subscription that wants this event's type. Runs in
    /// the verification transaction, so a verified event never lacks its deliveries.
    static func fanOut(_ task: VerificationTask, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO deliveries (event_id, subscription_id, user_id, sequence, webhook_id)
            SELECT \(task.eventID), s.id, \(task.userID), \(task.sequence),
                   'msg_' || substr(md5(\(task.eventID) || '/' || s.id), 1, 26)
            FROM subscriptions s
            WHERE s.enabled AND s.deleted_at IS NULL AND \(task.type.rawValue) = ANY (s.event_types)
            ON CONFLICT (event_id, subscription_id) WHERE replay_id IS NULL DO NOTHING
            """, logger: logger)
    }

    public func claimDeliveries(owner: String, limit: Int, lease: Duration, perSubscriptionCap: Int) async throws -> [DeliveryTask] {
        do {
            // Candidates: due, enabled, and for an ordered subscription nothing earlier of the
            // same user still open for it — neither a pending delivery nor an event of a type
            // it wants still awaiting verification. Each subscription gets at most its cap,
            // counting what is already in flight; first tries go before retries.
            let rows = try await client.query("""
                WITH in_flight AS (
                    SELECT subscription_id, count(*) AS busy FROM deliveries
                    WHERE status = 'pending' AND lease_expires_at > now()
                    GROUP BY subscription_id
                ), candidates AS (
                    SELECT d.id, d.attempts, d.due_at,
                           row_number() OVER (PARTITION BY d.subscription_id ORDER BY d.attempts > 0, d.due_at, d.id) AS rank,
                           coalesce(f.busy, 0) AS busy
                    FROM deliveries d
                    JOIN subscriptions s ON s.id = d.subscription_id
                    LEFT JOIN in_flight f ON f.subscription_id = d.subscription_id
                    WHERE d.status = 'pending' AND d.due_at <= now() AND s.enabled AND s.deleted_at IS NULL
                      AND (NOT s.ordered OR (
                          NOT EXISTS (SELECT 1 FROM deliveries p
                                      WHERE p.subscription_id = d.subscription_id AND p.user_id = d.user_id
                                        AND p.sequence < d.sequence AND p.status = 'pending')
                          AND NOT EXISTS (SELECT 1 FROM events e
                                          WHERE e.user_id = d.user_id AND e.sequence < d.sequence
                                            AND e.status = 'pending' AND e.type = ANY (s.event_types))))
                ), chosen AS (
                    SELECT id FROM candidates WHERE rank + busy <= \(perSubscriptionCap)
                    ORDER BY attempts > 0, due_at LIMIT \(limit)
                ), locked AS (
                    SELECT d.id FROM deliveries d
                    WHERE d.id IN (SELECT id FROM chosen) AND d.status = 'pending' AND d.due_at <= now()
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE deliveries AS d
                SET lease_owner = \(owner),
                    lease_expires_at = now() + make_interval(secs => \(lease.seconds)),
                    due_at = now() + make_interval(secs => \(lease.seconds)),
                    attempts = d.attempts + 1
                FROM locked, events AS e, subscriptions AS s
                WHERE d.id = locked.id AND e.id = d.event_id AND s.id = d.subscription_id
                RETURNING d.id, d.event_id, d.subscription_id, d.webhook_id, d.attempts, s.url, s.secret,
                          CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret END,
                          e.type, e.user_id, e.sequence, e.occurred_at, coalesce(e.verified_at, e.decided_at, now()),
                          e.provider_phone_number,
                          (SELECT p.provider_phone_number FROM events p
                           WHERE p.user_id = e.user_id AND p.sequence < e.sequence AND p.status = 'verified'
                           ORDER BY p.sequence DESC LIMIT 1),
                          d.replay_id, (SELECT r.created_at FROM replays r WHERE r.id = d.replay_id)
                """, logger: logger)
            var tasks: [DeliveryTask] = []
            for try await row in rows.decode(
                (Int64, String, String, String, Int, String, String, String?, String, String, Int64, Date, Date, String?, String?,
                 String?, Date?).self
            ) {
                guard let type = EventType(rawValue: row.8) else { throw StoreError.unexpected("event \(row.1) has an unknown type") }
                tasks.append(DeliveryTask(
                    deliveryID: row.0, eventID: row.1, subscriptionID: row.2, webhookID: row.3, url: row.5,
                    secrets: try SecretSealer.signingSecrets(row.6, row.7, subscriptionID: row.2, with: sealer), attempts: row.4, type: type,
                    userID: row.9, sequence: row.10, occurredAt: row.11, verifiedAt: row.12, phoneNumber: row.13,
                    previousPhoneNumber: row.14, replay: row.15.flatMap { id in row.16.map { DeliveryReplay(id: id, at: $0) } }
                ))
            }
            return tasks
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func recordDeliveryAttempt(
        _ task: DeliveryTask, owner: String, attempt: DeliveryAttempt, next: DeliveryNext, disableAfter: Duration
    ) async throws -> Bool {
        let (status, delay): (String, Double) = switch next {
        case .delivered: ("delivered", 0)
        case .retry(let after): ("pending", after.seconds)
        case .dead: ("dead", 0)
        }
        // What the attempt does to its subscription: a success clears its failing state; a
        // 410 disables it; any other failure starts (or continues) its failing period, and a
        // subscription whose deliveries have all failed for `disableAfter` is disabled.
        let (effect, disableReason): (String, String?) = switch next {
        case .delivered: ("succeeded", nil)
        case .dead(let reason?): ("gone", reason)
        case .retry, .dead(nil): ("failed", nil)
        }
        let milliseconds = Int(attempt.duration.seconds * 1000)
        let overdue = disableAfter.seconds
        do {
            // One statement, so one round trip and one commit. The delivery is updated first
            // (the subscription update waits on its result), which proves the lease is still
            // ours and keeps the lock order of deleteSubscription: delivery, then subscription.
            // A subscription row is locked only when it changes: every delivery to one
            // subscription would otherwise queue on that row until each other's commit, so a
            // healthy subscription's last success is kept to the second, and the failures
            // after the first leave it alone until it is due to be disabled.
            let rows = try await client.query("""
                WITH updated AS (
                    UPDATE deliveries
                    SET status = \(status), due_at = now() + make_interval(secs => \(delay)),
                        lease_owner = NULL, lease_expires_at = NULL,
                        finished_at = CASE WHEN \(status) = 'pending' THEN NULL ELSE now() END
                    WHERE id = \(task.deliveryID) AND lease_owner = \(owner) AND status = 'pending'
                    RETURNING id
                ), attempt AS (
                    INSERT INTO delivery_attempts (delivery_id, started_at, duration_ms, status_code, error_kind, error, response_head)
                    SELECT id, \(attempt.startedAt), \(milliseconds), \(attempt.statusCode), \(attempt.errorKind?.rawValue),
                           \(attempt.error), \(attempt.responseHead)
                    FROM updated
                ), subscription AS (
                    UPDATE subscriptions s
                    SET last_success_at = CASE WHEN \(effect) = 'succeeded' THEN now() ELSE s.last_success_at END,
                        failing_since = CASE \(effect) WHEN 'succeeded' THEN NULL
                                                       WHEN 'failed' THEN coalesce(s.failing_since, now())
                                                       ELSE s.failing_since END,
                        enabled = CASE WHEN \(effect) = 'gone' THEN false
                                       WHEN \(effect) = 'failed' AND s.failing_since < now() - make_interval(secs => \(overdue)) THEN false
                                       ELSE s.enabled END,
                        disabled_reason = CASE
                            WHEN \(effect) = 'gone' THEN \(disableReason)
                            WHEN \(effect) = 'failed' AND s.failing_since < now() - make_interval(secs => \(overdue))
                                THEN 'every delivery has failed since ' || to_char(s.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                            ELSE s.disabled_reason END,
                        updated_at = CASE WHEN \(effect) = 'gone' THEN now() ELSE s.updated_at END
                    WHERE s.id = \(task.subscriptionID) AND EXISTS (SELECT 1 FROM updated)
                      AND CASE \(effect)
                          WHEN 'succeeded' THEN s.failing_since IS NOT NULL OR s.last_success_at IS NULL
                                                OR s.last_success_at < now() - interval '1 second'
                          WHEN 'failed' THEN s.failing_since IS NULL
                                             OR (s.enabled AND s.failing_since < now() - make_interval(secs => \(overdue)))
                          ELSE true END
                )
                SELECT count(*) FROM updated
                """, logger: logger)
            for try await count in rows.decode(Int64.self) { return count == 1 }
            throw StoreError.unexpected("recording a delivery attempt returned no row")
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func releaseDelivery(_ task: DeliveryTask, owner: String) async throws {
        do {
            try await client.query("""
                UPDATE deliveries
                SET due_at = now(), lease_owner = NULL, lease_expires_at = NULL, attempts = greatest(attempts - 1, 0)
                WHERE id = \(task.deliveryID) AND lease_owner = \(owner) AND status = 'pending'
                """, logger: logger)
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func deliveries(eventID: String) async throws -> [DeliveryRecord] {
        do {
            var records: [Int64: DeliveryRecord] = [:]
            var order: [Int64] = []
            let rows = try await client.query("""
                SELECT id, subscription_id, webhook_id, status, created_at, finished_at,
                       CASE WHEN status = 'pending' THEN due_at END, replay_id
                FROM deliveries WHERE event_id = \(eventID) ORDER BY id
                """, logger: logger)
            for try await (id, subscriptionID, webhookID, status, createdAt, finishedAt, nextAt, replayID)
                in rows.decode((Int64, String, String, String, Date, Date?, Date?, String?).self) {
                records[id] = DeliveryRecord(
                    subscriptionID: subscriptionID, webhookID: webhookID, status: DeliveryStatus(rawValue: status) ?? .pending,
                    createdAt: createdAt, finishedAt: finishedAt, nextAttemptAt: nextAt, attempts: []
                )
                records[id]?.replayID = replayID
                order.append(id)
            }
            let attempts = try await client.query("""
                SELECT a.delivery_id, a.started_at, a.duration_ms, a.status_code, a.error_kind, a.error, a.response_head
                FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
                WHERE d.event_id = \(eventID) ORDER BY a.id
                """, logger: logger)
            for try await (deliveryID, startedAt, milliseconds, statusCode, kind, error, head)
                in attempts.decode((Int64, Date, Int, Int?, String?, String?, String?).self) {
                records[deliveryID]?.attempts.append(DeliveryAttempt(
                    startedAt: startedAt, duration: .milliseconds(milliseconds), statusCode: statusCode,
                    errorKind: kind.flatMap(DeliveryErrorKind.init(rawValue:)), error: error, responseHead: head
                ))
            }
            return order.compactMap { records[$0] }
        } catch {
            throw StoreError.wrap(error)
        }
    }
}
