import EchoRelayCore
import Foundation
import PostgresNIO

extension PostgresEventStore: SubscriptionDeliveryStore {
    public func subscriptionDeliveries(subscriptionID: String, _ filter: SubscriptionDeliveryFilter, beforeID: Int64?,
                                       limit: Int) async throws -> [SubscriptionDelivery] {
        do {
            // deliveries_subscription (subscription_id, id) walks the subscription's deliveries
            // newest first; the filters are checked on the way.
            let rows = try await client.query("""
                SELECT d.id, d.event_id, d.user_id, e.type, d.sequence, d.replay_id, d.webhook_id, d.status, d.attempts,
                       d.created_at, d.finished_at, CASE WHEN d.status = 'pending' THEN d.due_at END,
                       (SELECT a.status_code FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.id DESC LIMIT 1)
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
            var deliveries: [SubscriptionDelivery] = []
            for try await row in rows.decode(
                (Int64, String, String, String, Int64, String?, String, String, Int, Date, Date?, Date?, Int?).self
            ) {
                guard let type = EventType(rawValue: row.3) else { throw StoreError.unexpected("event \(row.1) has an unknown type") }
                deliveries.append(SubscriptionDelivery(
                    id: row.0, eventID: row.1, userID: row.2, type: type, sequence: row.4, replayID: row.5, webhookID: row.6,
                    status: DeliveryStatus(rawValue: row.7) ?? .pending, attempts: row.8, createdAt: row.9, finishedAt: row.10,
                    nextAttemptAt: row.11, lastStatusCode: row.12
                ))
            }
            return deliveries
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func deliveryAttempts(subscriptionID: String, deliveryID: Int64) async throws -> [DeliveryAttempt]? {
        do {
            // The delivery's own row first, so that one without attempts is told from none at all.
            let rows = try await client.query("""
                SELECT a.started_at, a.duration_ms, a.status_code, a.error_kind, a.error, a.response_head
                FROM deliveries d LEFT JOIN delivery_attempts a ON a.delivery_id = d.id
                WHERE d.id = \(deliveryID) AND d.subscription_id = \(subscriptionID)
                ORDER BY a.id
                """, logger: logger)
            var found = false
            var attempts: [DeliveryAttempt] = []
            for try await (startedAt, milliseconds, statusCode, kind, error, head)
                in rows.decode((Date?, Int?, Int?, String?, String?, String?).self) {
                found = true
                guard let startedAt, let milliseconds else { continue }
                attempts.append(DeliveryAttempt(
                    startedAt: startedAt, duration: .milliseconds(milliseconds), statusCode: statusCode,
                    errorKind: kind.flatMap(DeliveryErrorKind.init(rawValue:)), error: error, responseHead: head
                ))
            }
            return found ? attempts : nil
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
