import EchoRelayCore
import EchoRelaySQL

extension SQLiteEventStore {
    public func subscriptionDeliveries(subscriptionID: String, _ filter: SubscriptionDeliveryFilter, beforeID: Int64?,
                                       limit: Int) async throws -> [SubscriptionDelivery] {
        try await session.read { db in
            // deliveries_subscription (subscription_id, id) walks the subscription's deliveries
            // newest first; the filters are checked on the way.
            try await db.rows("""
                SELECT \(SubscriptionDelivery.columns)
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
                      beforeID, limit]).map(SubscriptionDelivery.init(row:))
        }
    }

    public func deliveries(webhookID: String) async throws -> WebhookDeliveries? {
        try await session.read { db in
            var found: WebhookDeliveries?
            var order: [Int64] = []
            var records: [Int64: DeliveryRecord] = [:]
            for row in try await db.rows("SELECT \(DeliveryRecord.columns), event_id FROM deliveries WHERE webhook_id = ?1 ORDER BY id",
                                         [webhookID]) {
                let id = try row.int64(0)
                records[id] = try DeliveryRecord(row: row)
                order.append(id)
                if found == nil { found = WebhookDeliveries(eventID: try row.string(8), subscriptionID: try row.string(1), deliveries: []) }
            }
            guard var found else { return nil }
            for row in try await db.rows("""
                SELECT \(DeliveryAttempt.columns), a.delivery_id
                FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
                WHERE d.webhook_id = ?1 ORDER BY a.id
                """, [webhookID]) {
                records[try row.int64(6)]?.attempts.append(try DeliveryAttempt(row: row))
            }
            found.deliveries = order.compactMap { records[$0] }
            return found
        }
    }

    public func deliveryAttempts(subscriptionID: String, deliveryID: Int64) async throws -> [DeliveryAttempt]? {
        try await session.read { db in
            guard try await !db.rows("SELECT 1 FROM deliveries WHERE id = ?1 AND subscription_id = ?2",
                                     [deliveryID, subscriptionID]).isEmpty else { return nil }
            return try await db.rows("""
                SELECT \(DeliveryAttempt.columns) FROM delivery_attempts a WHERE a.delivery_id = ?1 ORDER BY a.id
                """, [deliveryID]).map(DeliveryAttempt.init(row:))
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
