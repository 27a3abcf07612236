import EchoRelayCore
import Foundation

extension SQLiteEventStore {
    public func subscriptionDeliveries(subscriptionID: String, _ filter: SubscriptionDeliveryFilter, beforeID: Int64?,
                                       limit: Int) async throws -> [SubscriptionDelivery] {
        try await session.read { db in
            // deliveries_subscription (subscription_id, id) walks the subscription's deliveries
            // newest first; the filters are checked on the way.
            try await db.rows("""
                SELECT d.id, d.event_id, d.user_id, e.type, d.sequence, d.replay_id, d.webhook_id, d.status, d.attempts,
                       d.created_at, d.finished_at, CASE WHEN d.status = 'pending' THEN d.due_at END,
                       (SELECT a.status_code FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.id DESC LIMIT 1)
                FROM deliveries d
                JOIN events e ON e.id = d.event_id
                WHERE d.subscription_id = ?1
                  AND (?2 IS NULL OR d.status = ?2)
                  AND (?3 IS NULL OR e.type = ?3)
                  AND (?4 IS NULL OR d.user_id = ?4)
                  AND (?5 IS NULL OR d.created_at >= ?5)
                  AND (?6 IS NULL OR d.created_at < ?6)
                  AND (?7 IS NULL OR d.id < ?7)
                ORDER BY d.id DESC
                LIMIT ?8
                """, [subscriptionID, filter.status?.rawValue, filter.type?.rawValue, filter.userID, filter.since, filter.until,
                      beforeID, limit]).map { row in
                let eventID = try row.string(1)
                guard let type = EventType(rawValue: try row.string(3)) else {
                    throw StoreError.unexpected("event \(eventID) has an unknown type")
                }
                return SubscriptionDelivery(
                    id: try row.int64(0), eventID: eventID, userID: try row.string(2), type: type, sequence: try row.int64(4),
                    replayID: try row.optionalString(5), webhookID: try row.string(6),
                    status: DeliveryStatus(rawValue: try row.string(7)) ?? .pending, attempts: try row.int(8),
                    createdAt: try row.date(9), finishedAt: try row.optionalDate(10), nextAttemptAt: try row.optionalDate(11),
                    lastStatusCode: try row.optionalInt(12)
                )
            }
        }
    }

    public func deliveryAttempts(subscriptionID: String, deliveryID: Int64) async throws -> [DeliveryAttempt]? {
        try await session.read { db in
            guard try await !db.rows("SELECT 1 FROM deliveries WHERE id = ?1 AND subscription_id = ?2",
                                     [deliveryID, subscriptionID]).isEmpty else { return nil }
            return try await db.rows("""
                SELECT started_at, duration_ms, status_code, error_kind, error, response_head
                FROM delivery_attempts WHERE delivery_id = ?1 ORDER BY id
                """, [deliveryID]).map { row in
                DeliveryAttempt(
                    startedAt: try row.date(0), duration: .milliseconds(try row.int(1)), statusCode: try row.optionalInt(2),
                    errorKind: try row.optionalString(3).flatMap(DeliveryErrorKind.init(rawValue:)), error: try row.optionalString(4),
                    responseHead: try row.optionalString(5)
                )
            }
        }
    }
}

extension SQLiteEventStore {
    public func signingSecrets(subscriptionID: String) async throws -> [Secret]? {
        let now = SQLiteTime.now()
        return try await session.read { db in
            guard let row = try await db.rows("""
                SELECT secret, CASE WHEN previous_secret_expires_at > ?2 THEN previous_secret END
                FROM subscriptions WHERE id = ?1 AND deleted_at IS NULL
                """, [subscriptionID, now]).first else { return nil }
            return try SecretSealer.signingSecrets(try row.string(0), try row.optionalString(1), subscriptionID: subscriptionID,
                                                   with: sealer)
        }
    }

    public func recordTestDelivery(subscriptionID: String, _ delivery: TestDelivery) async throws {
        let attempt = delivery.attempt
        try await session.write { db in
            try await db.run("""
                INSERT INTO test_deliveries (subscription_id, webhook_id, started_at, duration_ms, status_code, error_kind, error, response_head)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                """, [subscriptionID, delivery.webhookID, attempt.startedAt, attempt.durationMilliseconds, attempt.statusCode,
                      attempt.errorKind?.rawValue, attempt.error, attempt.responseHead])
        }
    }
}
