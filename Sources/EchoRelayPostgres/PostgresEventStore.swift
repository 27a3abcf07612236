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

    /// Concurrent ingests share statements and commits (group commit): see `ingestBatch`.
    private let ingests: GroupCommit<IncomingEvent, IngestReceipt>
    /// Verification outcomes finished at about the same time share one statement: see `finishBatch`.
    let finishes: GroupCommit<VerificationFinish, Bool>
    /// Delivery attempts recorded at about the same time share one statement: see `recordBatch`.
    let attempts: GroupCommit<RecordedAttempt, Bool>

    public init(client: PostgresClient, logger: Logger, sealer: SecretSealer? = nil) {
        self.client = client
        self.logger = logger
        self.sealer = sealer
        ingests = Self.groupCommit(client: client) { await Self.ingestBatch($0, on: $1, logger: logger) }
        finishes = Self.groupCommit(client: client) { await Self.finishBatch($0, on: $1, logger: logger) }
        attempts = Self.groupCommit(client: client) { await Self.recordBatch($0, on: $1, logger: logger) }
    }

    /// Stores the event and its verification work item, and answers only after the commit
    /// that holds them.
    public func ingest(_ event: IncomingEvent) async throws -> IngestReceipt {
        try await ingests.submit(event)
    }

    /// Ingests a batch in one statement and one commit when it can. An id already stored, or
    /// repeated within the batch, is then answered from the stored row (a retry or a conflict).
    /// When the batch statement fails as a whole — an id stored by another process in the
    /// meantime, a deadlock, a lost connection — each event is tried alone, in arrival
    /// order, so each gets its own answer.
    static func ingestBatch(_ events: [IncomingEvent], on connection: PostgresConnection, logger: Logger) async -> [Result<IngestReceipt, any Error>] {
        if events.count == 1 {
            return [await Result(catching: { try await ingestOne(events[0], on: connection, logger: logger) })]
        }
        var firstOccurrences: [Int] = []
        var alone: [Int] = []
        var seen = Set<String>()
        for (index, event) in events.enumerated() {
            if seen.insert(event.id).inserted { firstOccurrences.append(index) } else { alone.append(index) }
        }
        var results = [Result<IngestReceipt, any Error>?](repeating: nil, count: events.count)
        do {
            let stored = try await insertBatch(firstOccurrences.map { events[$0] }, on: connection, logger: logger)
            for index in firstOccurrences {
                if let sequence = stored[events[index].id] {
                    results[index] = .success(IngestReceipt(id: events[index].id, sequence: sequence, isDuplicate: false))
                } else {
                    alone.append(index)  // stored before this batch
                }
            }
            // Every id left is stored now: its answer is the stored row's, without trying
            // (and failing) to insert it again.
            for index in alone.sorted() {
                results[index] = await Result(catching: { try await receiptForExisting(events[index], on: connection, logger: logger) })
            }
        } catch {
            logger.debug("a batched ingest failed as a whole; its events are tried one by one",
                         metadata: ["events": "\(events.count)", "error": "\(StoreError.wrap(error))"])
            for index in events.indices {
                results[index] = await Result(catching: { try await ingestOne(events[index], on: connection, logger: logger) })
            }
        }
        return results.map { $0 ?? .failure(StoreError.unexpected("an event of a batch got no answer")) }
    }

    /// One statement for the whole batch: each user's sequence moves once by its count of new
    /// events, which are numbered in arrival order, and every new event gets its work item.
    /// Users are locked in user-id order, so two batches never wait on each other in a cycle.
    /// Returns the sequence of each event it stored; ids already stored are left out.
    private static func insertBatch(_ events: [IncomingEvent], on connection: PostgresConnection, logger: Logger) async throws -> [String: Int64] {
        let ids = events.map(\.id)
        let users = events.map(\.userID)
        let types = events.map(\.type.rawValue)
        let occurredAt = events.map(\.occurredAt)
        let fingerprints = events.map { ByteBuffer(bytes: $0.fingerprint) }
        let phones = events.map { $0.phoneNumber ?? "" }
        let providers = events.map(\.echo.serviceProvider)
        let authorizations = events.map(\.echo.authorization.revealed)
        let rows = try await connection.query("""
            WITH input AS (
                SELECT * FROM unnest(\(ids)::text[], \(users)::text[], \(types)::text[], \(occurredAt)::timestamptz[],
                                     \(fingerprints)::bytea[], \(phones)::text[], \(providers)::text[], \(authorizations)::text[])
                    WITH ORDINALITY AS i(id, user_id, type, occurred_at, fingerprint, phone, provider, authorization, position)
            ), fresh AS (
                SELECT * FROM input i WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = i.id)
            ), counts AS (
                SELECT user_id, count(*) AS n FROM fresh GROUP BY user_id
            ), next AS (
                INSERT INTO user_sequences AS s (user_id, last_sequence)
                SELECT user_id, n FROM counts ORDER BY user_id
                ON CONFLICT (user_id) DO UPDATE SET last_sequence = s.last_sequence + EXCLUDED.last_sequence
                RETURNING user_id, last_sequence
            ), stored AS (
                INSERT INTO events (id, user_id, sequence, type, occurred_at, fingerprint,
                                    pushed_phone_number, echo_service_provider, echo_authorization)
                SELECT f.id, f.user_id,
                       next.last_sequence - counts.n + row_number() OVER (PARTITION BY f.user_id ORDER BY f.position),
                       f.type, f.occurred_at, f.fingerprint, nullif(f.phone, ''), f.provider, f.authorization
                FROM fresh f JOIN counts USING (user_id) JOIN next USING (user_id)
                RETURNING id, sequence
            ), work AS (
                INSERT INTO work_items (kind, event_id) SELECT 'verify', id FROM stored
            )
            SELECT id, sequence FROM stored
            """, logger: logger)
        var stored: [String: Int64] = [:]
        for try await (id, sequence) in rows.decode((String, Int64).self) {
            stored[id] = sequence
        }
        return stored
    }

    /// One event in one statement: the user's next sequence number, the event and its
    /// verification work item. The upsert's row lock serialises a user's concurrent events,
    /// and a duplicate id fails the whole statement, so a sequence number is never taken
    /// without its event.
    static func ingestOne(_ event: IncomingEvent, on connection: PostgresConnection, logger: Logger) async throws -> IngestReceipt {
        do {
            let rows = try await connection.query("""
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
            return try await receiptForExisting(event, on: connection, logger: logger)
        } catch {
            throw StoreError.wrap(error)
        }
    }

    /// The first receipt for a retried `id`, or a conflict if the body differs.
    private static func receiptForExisting(_ event: IncomingEvent, on connection: PostgresConnection, logger: Logger) async throws -> IngestReceipt {
        do {
            let rows = try await connection.query(
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
