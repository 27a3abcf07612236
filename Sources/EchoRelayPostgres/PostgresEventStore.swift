import EchoRelayCore
import EchoRelaySQL
import EchoRelayQueue
import EchoRelaySchema
import Foundation
import PostgresNIO

/// The production store: PostgreSQL through a `DatabaseClient` (a pool per host), which must be
/// running in the same ServiceGroup.
public struct PostgresEventStore: EventStore {
    let client: DatabaseClient
    let logger: Logger
    /// Seals subscription secrets on write and opens them for signing; nil stores them as is.
    let sealer: SecretSealer?
    /// Where other processes verify what this one stores (`--role ingest`): see `init`.
    let wakeOtherProcesses: WakeLimiter?
    /// Set with `Durability.standby`: acknowledged commits wait for a standby's flush.
    let standby: StandbyConfirmation?
    /// Where other processes deliver what this one verifies: see `init`.
    let wakeOnOutcomes: WakeLimiter?
    /// How long a lone ingest called on the store waits for its commit: see `init`.
    let ingestWait: Duration
    /// What `/readyz` last learned of the migrations.
    let migrationsReadiness = RememberedReadiness()

    /// - ingestWait: with `.standby`, how long a commit waits for a standby's flush; and how
    ///   long `ingest` (one event, outside the queue's completer) may take.
    /// - wakeOtherProcesses: set where the work this process stores is done by other processes
    ///   (`--role ingest`): ingest statements then carry a `NOTIFY`, at most one per
    ///   `WakeLimiter.interval`, inside their own transaction.
    /// - wakeOnOutcomes: set where other processes may deliver what this one verifies: outcome
    ///   statements that make deliveries due then carry a `NOTIFY`, at most one per interval,
    ///   inside their own transaction (none is sent after the commit).
    /// - durability: with `.standby`, an ingest batch is answered once a standby has flushed
    ///   its commit (`StandbyConfirmation`, waiting up to `ingestWait`), as are received SETs
    ///   and `confirmDurable()`; other commits (the workers') do not wait.
    public init(client: DatabaseClient, logger: Logger, sealer: SecretSealer? = nil, ingestWait: Duration = .seconds(10),
                durability: Durability = .local, wakeOtherProcesses: WakeLimiter? = nil, wakeOnOutcomes: WakeLimiter? = nil) {
        self.client = client
        self.logger = logger
        self.sealer = sealer
        self.wakeOtherProcesses = wakeOtherProcesses
        self.wakeOnOutcomes = wakeOnOutcomes
        self.ingestWait = ingestWait
        standby = durability == .standby ? StandbyConfirmation(wait: ingestWait) : nil
    }

    /// On one server's client, run by the caller (tests and one-shot tools).
    public init(client: PostgresClient, logger: Logger, sealer: SecretSealer? = nil, ingestWait: Duration = .seconds(10),
                durability: Durability = .local, wakeOtherProcesses: WakeLimiter? = nil, wakeOnOutcomes: WakeLimiter? = nil) {
        self.init(client: DatabaseClient(client, logger: logger), logger: logger, sealer: sealer, ingestWait: ingestWait,
                  durability: durability, wakeOtherProcesses: wakeOtherProcesses, wakeOnOutcomes: wakeOnOutcomes)
    }

    /// Stores the event and its verification work item on its own, and answers only after
    /// the commit that holds them. `serve` ingests through the queue's completer instead.
    public func ingest(_ event: IncomingEvent) async throws -> IngestReceipt {
        try await writeIngests(within: ingestWait * 2, handOff: { _ in nil }) { [event] }[0].get().receipt
    }

    public func writeIngests(
        within limit: Duration, handOff: @escaping @Sendable (Int) -> HandOff?, take: @escaping @Sendable () -> [IncomingEvent]
    ) async throws -> [Result<IngestWritten, any Error>] {
        try await writeBatch(within: limit, take: take) { [wakeOtherProcesses, standby, logger] events, connection in
            let results = await Self.ingestBatch(events, on: connection, wakePayload: wakeOtherProcesses?.next(), handOff: handOff,
                                                 logger: logger)
            // One confirmation for the whole batch, duplicates included: a stored receipt is
            // only as durable as the commit that stored it.
            return await standby?.confirming(results, on: connection, logger: logger) ?? results
        }
    }

    /// Ingests a batch in one statement and one commit when it can. An id already stored, or
    /// repeated within the batch, is then answered from the stored row (a retry or a conflict).
    /// When the batch statement fails as a whole — an id stored by another process in the
    /// meantime, a deadlock, a lost connection — each event is tried alone, in arrival
    /// order, so each gets its own answer.
    static func ingestBatch(
        _ events: [IncomingEvent], on connection: PostgresConnection, wakePayload: String?, handOff: @escaping @Sendable (Int) -> HandOff?,
        logger: Logger
    ) async -> [Result<IngestWritten, any Error>] {
        if events.count == 1 {
            return [await Result(catching: {
                try await ingestAlone(events[0], on: connection, wakePayload: wakePayload, handOff: handOff, logger: logger)
            })]
        }
        var firstOccurrences: [Int] = []
        var repeated: [Int] = []
        var seen = Set<String>()
        for (index, event) in events.enumerated() {
            if seen.insert(event.id).inserted { firstOccurrences.append(index) } else { repeated.append(index) }
        }
        var results = [Result<IngestWritten, any Error>?](repeating: nil, count: events.count)
        do {
            var fresh = firstOccurrences
            var storedBefore = repeated
            let stored: [String: Inserted]
            do {
                stored = try await insert(fresh.map { events[$0] }, on: connection, wakePayload: wakePayload, handOff: handOff, logger: logger)
            } catch let error as PSQLError where error.isUniqueViolation {
                // Retries among them: those are answered from their rows below; the rest go again.
                let existing = try await storedRows(ids: fresh.map { events[$0].id }, on: connection, logger: logger)
                storedBefore += fresh.filter { existing[events[$0].id] != nil }
                fresh.removeAll { existing[events[$0].id] != nil }
                stored = fresh.isEmpty ? [:]
                    : try await insert(fresh.map { events[$0] }, on: connection, wakePayload: wakePayload, handOff: handOff, logger: logger)
            }
            for index in fresh {
                if let inserted = stored[events[index].id] {
                    results[index] = .success(inserted.written(events[index]))
                } else {
                    storedBefore.append(index)
                }
            }
            // Every id left is stored now: its answer is the stored row's, read in one query,
            // without trying (and failing) to insert it again.
            let existing = try await storedRows(ids: storedBefore.map { events[$0].id }, on: connection, logger: logger)
            for index in storedBefore {
                results[index] = Result { IngestWritten(receipt: try receipt(for: events[index], from: existing[events[index].id])) }
            }
        } catch {
            logger.debug("a batched ingest failed as a whole; its events are tried one by one",
                         metadata: ["events": "\(events.count)", "error": "\(StoreError.wrap(error))"])
            for index in events.indices {
                results[index] = await Result(catching: {
                    try await ingestAlone(events[index], on: connection, wakePayload: wakePayload, handOff: handOff, logger: logger)
                })
            }
        }
        return results.map { $0 ?? .failure(StoreError.unexpected("an event of a batch got no answer")) }
    }

    /// One event in its own statement: stored, or answered from the row stored before (a
    /// retry, or a conflict if the body differs).
    static func ingestAlone(
        _ event: IncomingEvent, on connection: PostgresConnection, wakePayload: String?, handOff: @escaping @Sendable (Int) -> HandOff?,
        logger: Logger
    ) async throws -> IngestWritten {
        do {
            if let inserted = try await insert([event], on: connection, wakePayload: wakePayload, handOff: handOff, logger: logger)[event.id] {
                return inserted.written(event)
            }
        } catch let error as PSQLError where error.isUniqueViolation {
            // Stored before (a retry), or by another process at the same moment: answered from its row below.
        } catch {
            throw StoreError.wrap(error)
        }
        return IngestWritten(receipt: try await receiptForExisting(event, on: connection, logger: logger))
    }

    /// Runs `IngestStatement`: the sequence of each event; an id stored before fails it as a
    /// whole. When `handOff` allows the batch, the work items are leased to its owner as they
    /// are written, and each row comes with its task.
    private static func insert(
        _ events: [IncomingEvent], on connection: PostgresConnection, wakePayload: String?, handOff: @escaping @Sendable (Int) -> HandOff?,
        logger: Logger
    ) async throws -> [String: Inserted] {
        let handOff = handOff(events.count)
        var stored: [String: (sequence: Int64, workItem: Int64)] = [:]
        stored.reserveCapacity(events.count)
        let statement = IngestStatement(events: events, wakePayload: wakePayload, handOff: handOff)
        for try await (id, sequence, workItem) in try await connection.execute(statement, logger: logger) {
            stored[id] = (sequence, workItem)
        }
        return Dictionary(uniqueKeysWithValues: events.compactMap { event in
            stored[event.id].map { row in
                (event.id, Inserted(sequence: row.sequence, handedOff: handOff == nil ? nil : VerificationTask(
                    workItemID: row.workItem, eventID: event.id, type: event.type, userID: event.userID, sequence: row.sequence,
                    occurredAt: event.occurredAt, pushedPhoneNumber: event.phoneNumber, echo: event.echo, oauth2: event.oauth2,
                    attempts: 1)))
            }
        })
    }

    /// An event the ingest statement stored: its sequence, and its task when it was handed off.
    struct Inserted {
        let sequence: Int64
        let handedOff: VerificationTask?

        func written(_ event: IncomingEvent) -> IngestWritten {
            IngestWritten(receipt: IngestReceipt(id: event.id, sequence: sequence, isDuplicate: false, handedOff: handedOff != nil),
                          handedOff: handedOff)
        }
    }

    /// The first receipt for a retried `id`, or a conflict if the body differs.
    private static func receiptForExisting(_ event: IncomingEvent, on connection: PostgresConnection, logger: Logger) async throws -> IngestReceipt {
        try receipt(for: event, from: try await storedRows(ids: [event.id], on: connection, logger: logger)[event.id])
    }

    /// The sequence and fingerprint of each of these ids that is stored.
    private static func storedRows(
        ids: [String], on connection: PostgresConnection, logger: Logger
    ) async throws -> [String: (sequence: Int64, fingerprint: Data)] {
        guard !ids.isEmpty else { return [:] }
        do {
            var rows: [String: (sequence: Int64, fingerprint: Data)] = [:]
            let query = try await connection.query(
                "SELECT id, sequence, fingerprint FROM events WHERE id = ANY(\(ids))", logger: logger
            )
            for try await (id, sequence, fingerprint) in query.decode((String, Int64, Data).self) {
                rows[id] = (sequence, fingerprint)
            }
            return rows
        } catch {
            throw StoreError.wrap(error)
        }
    }

    /// A retry's answer from its stored row: the first receipt, or a conflict if the body differs.
    private static func receipt(for event: IncomingEvent, from stored: (sequence: Int64, fingerprint: Data)?) throws -> IngestReceipt {
        guard let stored else { throw StoreError.unexpected("a unique key refused event \(event.id), and no event has its id") }
        guard Array(stored.fingerprint) == event.fingerprint else { throw IngestError.conflict(id: event.id) }
        return IngestReceipt(id: event.id, sequence: stored.sequence, isDuplicate: true)
    }

    public func event(id: String) async throws -> StoredEvent? {
        try await rows("""
            SELECT \(unescaped: StoredEvent.columns) FROM events e WHERE e.id = \(id)
            """, StoredEvent.init(row:)).first
    }

    /// From what the client knows of its host and what was last learned of the migrations:
    /// no statement once both are known good (`HostWatch`, `RememberedReadiness`).
    public func readiness() async -> Readiness {
        // Why stays in the client's log: the answer goes to anyone, and must not name hosts.
        if case .unreachable = client.health { return .notReady("database unreachable") }
        return await migrationsReadiness.readiness { [client, logger] in
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

    public func confirmDurable() async throws {
        guard let standby else { return }
        try await wrapped { try await client.withConnection { try await standby.confirm(on: $0, logger: logger) } }
    }
}
