import EchoRelayCore
import EchoRelaySQL
import PostgresNIO

extension PostgresEventStore: SubscriptionDeliveryStore {
    public func subscriptionDeliveries(subscriptionID: String, _ filter: SubscriptionDeliveryFilter, beforeID: Int64?,
                                       limit: Int) async throws -> [SubscriptionDelivery] {
        // deliveries_subscription (subscription_id, id) walks the subscription's deliveries
        // newest first; the filters are checked on the way.
        try await rows("""
            SELECT \(unescaped: SubscriptionDelivery.columns)
            FROM deliveries d
            JOIN events e ON e.id = d.event_id
            WHERE d.subscription_id = \(subscriptionID)
              AND (\(filter.status?.rawValue)::text IS NULL OR d.status = \(filter.status?.rawValue))
              AND (\(filter.type?.rawValue)::text IS NULL OR e.type = \(filter.type?.rawValue))
              AND (\(filter.userID)::text IS NULL OR d.user_id = \(filter.userID))
              AND (\(filter.since)::timestamptz IS NULL OR d.created_at >= \(filter.since))
              AND (\(filter.until)::timestamptz IS NULL OR d.created_at < \(filter.until))
              AND (\(beforeID)::bigint IS NULL OR d.id < \(beforeID))
            ORDER BY d.id DESC
            LIMIT \(limit)
            """, SubscriptionDelivery.init(row:))
    }

    public func deliveries(webhookID: String) async throws -> WebhookDeliveries? {
        try await wrapped {
            var found: WebhookDeliveries?
            var order: [Int64] = []
            var records: [Int64: DeliveryRecord] = [:]
            // deliveries_webhook (webhook_id).
            let rows = try await client.query("""
                SELECT \(unescaped: DeliveryRecord.columns), event_id FROM deliveries WHERE webhook_id = \(webhookID) ORDER BY id
                """, logger: logger)
            for row in try await rows.storeRows() {
                let id = try row.int64(0)
                records[id] = try DeliveryRecord(row: row)
                order.append(id)
                if found == nil { found = WebhookDeliveries(eventID: try row.string(8), subscriptionID: try row.string(1), deliveries: []) }
            }
            guard var found else { return nil }
            let attempts = try await client.query("""
                SELECT \(unescaped: DeliveryAttempt.columns), a.delivery_id
                FROM delivery_attempts a WHERE a.delivery_id = ANY (\(order)) ORDER BY a.id
                """, logger: logger)
            for row in try await attempts.storeRows() {
                records[try row.int64(6)]?.attempts.append(try DeliveryAttempt(row: row))
            }
            found.deliveries = order.compactMap { records[$0] }
            return found
        }
    }

    public func deliveryAttempts(subscriptionID: String, deliveryID: Int64) async throws -> [DeliveryAttempt]? {
        // The delivery's own row first, so that one without attempts is told from none at all.
        let found: [DeliveryAttempt?] = try await rows("""
            SELECT \(unescaped: DeliveryAttempt.columns)
            FROM deliveries d LEFT JOIN delivery_attempts a ON a.delivery_id = d.id
            WHERE d.id = \(deliveryID) AND d.subscription_id = \(subscriptionID)
            ORDER BY a.id
            """) { row in
            // A delivery without attempts is one row of NULLs.
            try row.optionalDate(0) == nil ? nil : try DeliveryAttempt(row: row)
        }
        guard !found.isEmpty else { return nil }
        return found.compactMap { $0 }
    }
}

extension PostgresEventStore: TestDeliveryStore {
    public func signingSecrets(subscriptionID: String) async throws -> [Secret]? {
        try await wrapped {
            let rows = try await client.query("""
                SELECT secret, CASE WHEN previous_secret_expires_at > now() THEN previous_secret END
                FROM subscriptions WHERE id = \(subscriptionID) AND deleted_at IS NULL
                """, logger: logger)
            for try await (current, previous) in rows.decode((String, String?).self) {
                return try SecretSealer.signingSecrets(current, previous, subscriptionID: subscriptionID, with: sealer)
            }
            return nil
        }
    }

    public func recordTestDelivery(subscriptionID: String, _ delivery: TestDelivery) async throws {
        let attempt = delivery.attempt
        try await wrapped {
            try await client.query("""
                INSERT INTO test_deliveries (subscription_id, webhook_id, started_at, duration_ms, status_code, error_kind, error, response_head)
                VALUES (\(subscriptionID), \(delivery.webhookID), \(attempt.startedAt), \(attempt.durationMilliseconds),
                        \(attempt.statusCode), \(attempt.errorKind?.rawValue), \(attempt.error), \(attempt.responseHead))
                """, logger: logger)
        }
    }
}
