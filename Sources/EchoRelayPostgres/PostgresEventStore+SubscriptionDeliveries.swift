import EchoRelayCore
import PostgresNIO

extension PostgresEventStore: SubscriptionDeliveryStore {
    public func subscriptionDeliveries(subscriptionID: String, _ filter: SubscriptionDeliveryFilter, beforeID: Int64?,
                                       limit: Int) async throws -> [SubscriptionDelivery] {
        do {
            // deliveries_subscription (subscription_id, id) walks the subscription's deliveries
            // newest first; the filters are checked on the way.
            let rows = try await client.query("""
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
                """, logger: logger)
            return try await rows.storeRows().map(SubscriptionDelivery.init(row:))
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func deliveryAttempts(subscriptionID: String, deliveryID: Int64) async throws -> [DeliveryAttempt]? {
        do {
            // The delivery's own row first, so that one without attempts is told from none at all.
            let rows = try await client.query("""
                SELECT \(unescaped: DeliveryAttempt.columns)
                FROM deliveries d LEFT JOIN delivery_attempts a ON a.delivery_id = d.id
                WHERE d.id = \(deliveryID) AND d.subscription_id = \(subscriptionID)
                ORDER BY a.id
                """, logger: logger).storeRows()
            guard !rows.isEmpty else { return nil }
            // A delivery without attempts is one row of NULLs.
            return try rows.filter { try $0.optionalDate(0) != nil }.map(DeliveryAttempt.init(row:))
        } catch {
            throw StoreError.wrap(error)
        }
    }
}

extension PostgresEventStore: TestDeliveryStore {
    public func signingSecrets(subscriptionID: String) async throws -> [Secret]? {
        do {
            let rows = try await client.query("""
                SELECT secret, CASE WHEN previous_secret_expires_at > now() THEN previous_secret END
                FROM subscriptions WHERE id = \(subscriptionID) AND deleted_at IS NULL
                """, logger: logger)
            for try await (current, previous) in rows.decode((String, String?).self) {
                return try SecretSealer.signingSecrets(current, previous, subscriptionID: subscriptionID, with: sealer)
            }
            return nil
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func recordTestDelivery(subscriptionID: String, _ delivery: TestDelivery) async throws {
        let attempt = delivery.attempt
        do {
            try await client.query("""
                INSERT INTO test_deliveries (subscription_id, webhook_id, started_at, duration_ms, status_code, error_kind, error, response_head)
                VALUES (\(subscriptionID), \(delivery.webhookID), \(attempt.startedAt), \(attempt.durationMilliseconds),
                        \(attempt.statusCode), \(attempt.errorKind?.rawValue), \(attempt.error), \(attempt.responseHead))
                """, logger: logger)
        } catch {
            throw StoreError.wrap(error)
        }
    }
}
