import EchoRelayCore
import Foundation
import Logging
import PostgresNIO

/// The production store: PostgreSQL through a pooled `PostgresClient`, which must be
/// running in the same ServiceGroup.
public struct PostgresEventStore: EventStore {
    let client: PostgresClient
    let logger: Logger
    /// Seals subscription secrets on write and opens them for signing; nil stores them as is.
    let sealer: SecretSealer?

    public init(client: PostgresClient, logger: Logger, sealer: SecretSealer? = nil) {
        self.client = client
        self.logger = logger
        self.sealer = sealer
    }

    public func ingest(_ event: IncomingEvent) async throws -> IngestReceipt {
        do {
            // One statement, one round trip, one commit: the user's next sequence number,
            // the event and its verification work item. The upsert's row lock serialises a
            // user's concurrent events, and a duplicate id fails the whole statement, so a
            // sequence number is never taken without its event.
            let rows = try await client.query("""
                WITH next AS (
                    INSERT INTO user_sequences AS s (user_id, last_sequence) VALUES (\(event.userID), 1)
                    ON CONFLICT (user_id) DO UPDATE SET last_sequence = s.last_sequence + 1
                    RETURNING last_sequence
                ), stored AS (
                    INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint,
                                        pushed_phone_number, echo_service_provider, echo_authorization)
                    SELECT \(event.id), \(event.userID), next.last_sequence, \(event.type.rawValue),
                           \(event.occurredAt), \(Data(event.fingerprint)), \(event.phoneNumber),
                           \(event.echo.serviceProvider), \(event.echo.authorization.revealed)
                    FROM next
                    RETURNING id, sequence
                ), work AS (
                    INSERT INTO work_items (kind, event_id) SELECT 'verify', id FROM stored
                )
                SELECT sequence FROM stored
                """, logger: logger)
            for try await sequence in rows.decode(Int64.self) {
                return IngestReceipt(id: event.id, sequence: sequence, isDuplicate: false)
            }
            throw StoreError.unexpected("ingest returned no row")
        } catch let error as PSQLError where error.isUniqueViolation(constraint: "events_pkey") {
            return try await receiptForExisting(event)
        } catch {
            throw StoreError.wrap(error)
        }
    }

    /// The first receipt for a retried `id`, or a conflict if the body differs.
    private func receiptForExisting(_ event: IncomingEvent) async throws -> IngestReceipt {
        do {
            let rows = try await client.query(
                "SELECT sequence, fingerprint FROM events WHERE id = \(event.id)", logger: logger
            )
            for try await (sequence, fingerprint) in rows.decode((Int64, Data).self) {
                guard Array(fingerprint) == event.fingerprint else { throw IngestError.conflict(id: event.id) }
                return IngestReceipt(id: event.id, sequence: sequence, isDuplicate: true)
            }
            throw StoreError.unexpected("event vanished after a duplicate-key error")
        } catch let error as IngestError {
            throw error
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func event(id: String) async throws -> StoredEvent? {
        do {
            let rows = try await client.query("""
                SELECT id, type, user_id, sequence, occurred_at, received_at, status, status_reason,
                       decided_at, verified_at, provider_user_id, provider_phone_number
                FROM events WHERE id = \(id)
                """, logger: logger)
            for try await (id, type, userID, sequence, occurredAt, receivedAt, status, reason, decidedAt, verifiedAt,
                           providerUserID, providerPhone)
                in rows.decode((String, String, String, Int64, Date, Date, String, String?, Date?, Date?, String?, String?).self) {
                guard let type = EventType(rawValue: type), let status = EventStatus(rawValue: status) else {
                    throw StoreError.unexpected("event \(id) has an unknown type or status")
                }
                return StoredEvent(
                    id: id, type: type, userID: userID, sequence: sequence, occurredAt: occurredAt,
                    receivedAt: receivedAt, status: status, reason: reason.flatMap(VerificationReason.init(rawValue:)),
                    decidedAt: decidedAt, verifiedAt: verifiedAt, providerUserID: providerUserID,
                    providerPhoneNumber: providerPhone
                )
            }
            return nil
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func readiness() async -> Readiness {
        do {
            let migrator = Migrator(client: client, logger: logger)
            // A database that does not answer within the limit is as good as down.
            let pending = try await withTimeout(.seconds(3)) { try await migrator.pending() }
            return pending.isEmpty ? .ready : .notReady("migrations pending: \(pending.map(String.init).joined(separator: ", "))")
        } catch let error as MigrationError {
            return .notReady(error.description)
        } catch {
            return .notReady("database unreachable")
        }
    }
}
