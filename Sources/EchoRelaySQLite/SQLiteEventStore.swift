import EchoRelayCore
import EchoRelaySQL
import EchoRelaySchema
import Foundation
import Logging
import SQLiteNIO

/// The embedded store: everything in one local SQLite file, so `echorelay serve` runs with
/// no database server. It serves one process: `open` locks the file, and every operation
/// runs alone on one connection, so claims, leases and the per-user order behave as in
/// PostgreSQL within that process. Call `close()` before dropping it.
public final class SQLiteEventStore: EchoRelayStore {
    let session: SQLiteSession
    let logger: Logger
    public let path: String
    /// Seals subscription secrets on write and opens them for signing; nil stores them as is.
    let sealer: SecretSealer?
    /// What `/readyz` last learned of the migrations.
    let migrationsReadiness = RememberedReadiness()

    private init(session: SQLiteSession, path: String, logger: Logger, sealer: SecretSealer?) {
        self.session = session
        self.path = path
        self.logger = logger
        self.sealer = sealer
    }

    /// Opens (creating if missing) the database file and locks it for this process. Throws
    /// `SQLiteStoreError.locked` if another EchoRelay process, or another store in this one,
    /// has it. Does not migrate: call `migrate()`. With a `sealer`, subscription secrets are
    /// stored sealed (see `SecretSealer`).
    public static func open(path: String, logger: Logger, sealer: SecretSealer? = nil) async throws -> SQLiteEventStore {
        let lock = try FileLock.acquire(path: path)
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        } catch {
            lock.release()
            throw SQLiteStoreError.cannotOpen(path: path, reason: "\(error)")
        }
        do {
            try await configure(connection, path: path)
        } catch {
            try? await connection.close()
            lock.release()
            // For example "notADatabase: file is not a database".
            throw error as? SQLiteStoreError ?? SQLiteStoreError.cannotOpen(path: path, reason: "\(error)")
        }
        logger.info("opened the embedded SQLite store", metadata: ["sqlite.path": "\(path)"])
        return SQLiteEventStore(session: SQLiteSession(connection: connection, lock: lock), path: path, logger: logger, sealer: sealer)
    }

    private static func configure(_ connection: SQLiteConnection, path: String) async throws {
        // busy_timeout first: it replaces SQLiteNIO's busy handler, which retries forever.
        // With the file lock no other process writes, so waiting only covers a stray reader
        // (the sqlite3 shell, a backup).
        _ = try await connection.query("PRAGMA busy_timeout = 5000")
        // WAL: readers never block the writer, and a commit appends to the log instead of
        // rewriting pages.
        let mode = try await connection.query("PRAGMA journal_mode = WAL").first?.column("journal_mode")?.string
        guard mode?.lowercased() == "wal" else {
            throw SQLiteStoreError.cannotOpen(path: path, reason: "WAL journal mode is not available (got \(mode ?? "nothing"))")
        }
        _ = try await connection.query("PRAGMA foreign_keys = ON")
        // FULL, not NORMAL: an event is acknowledged only once committed, and nothing
        // acknowledged may be lost. In WAL mode NORMAL survives a crash of the process but
        // may lose the last commits on power loss; FULL syncs the log on every commit.
        _ = try await connection.query("PRAGMA synchronous = FULL")
    }

    /// Closes the connection and releases the file, so another process may open it.
    public func close() async throws {
        try await session.close()
    }

    /// Applies the pending SQLite migrations; returns the versions applied, as the PostgreSQL
    /// migrator does.
    @discardableResult
    public func migrate(_ migrations: [Migration] = Migration.sqlite) async throws -> [Int] {
        defer { migrationsReadiness.forget() }
        return try await session.read { db in try await SQLiteMigrator(migrations: migrations, logger: logger).migrate(db) }
    }

    /// The versions not applied yet. Throws `MigrationError` if an applied one was edited.
    public func pendingMigrations(_ migrations: [Migration] = Migration.sqlite) async throws -> [Int] {
        try await session.read { db in try await SQLiteMigrator(migrations: migrations, logger: logger).pending(db) }
    }

    // MARK: Settings

    /// A value this process keeps across restarts, or nil.
    public func setting(_ key: String) async throws -> String? {
        try await session.read { db in
            try await db.row("SELECT value FROM settings WHERE key = ?1", [key])?.string(0)
        }
    }

    /// Stores `value` under `key` unless a value is there already; returns the value now stored.
    public func insertSettingIfAbsent(_ key: String, value: String) async throws -> String {
        try await session.write { db in
            try await db.run("INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING", [key, value])
            guard let row = try await db.row("SELECT value FROM settings WHERE key = ?1", [key]) else {
                throw StoreError.unexpected("setting vanished after insert")
            }
            return try row.string(0)
        }
    }
}

extension SQLiteEventStore {
    /// Stores the event on its own; `serve` ingests through the queue's completer instead.
    public func ingest(_ event: IncomingEvent) async throws -> IngestReceipt {
        try await writeIngests(within: .seconds(60), handOff: { _ in nil }) { [event] }[0].get().receipt
    }

    /// One transaction for the whole batch (see `writeBatch`), in four statements however many
    /// events it holds: each statement is a trip to SQLite's thread.
    public func writeIngests(
        within limit: Duration, handOff: @escaping @Sendable (Int) -> HandOff?, take: @escaping @Sendable () -> [IncomingEvent]
    ) async throws -> [Result<IngestWritten, any Error>] {
        try await Self.writeBatch("ingests", take: take, session: session, logger: logger) { events, db in
            try await Self.ingest(events, handOff: handOff, db: db)
        }
    }

    /// The batch inside the caller's transaction. A retried id returns its first receipt and
    /// writes nothing (the check and the insert share the transaction and the write lock, so
    /// they cannot race); an id repeated within the batch is answered like a retry of its first
    /// occurrence. New events take their users' next sequence numbers in arrival order and are
    /// stored with their verification work items: a sequence number is never taken without its event.
    /// With a `handOff` that allows the new events, their work items are written leased to its
    /// owner, and answered with their tasks.
    private static func ingest(
        _ events: [IncomingEvent], handOff: (Int) -> HandOff?, db: SQLiteDB
    ) async throws -> [Result<IngestWritten, any Error>] {
        func placeholders(_ rows: Int, _ columns: Int) -> String {
            let row = "(" + Array(repeating: "?", count: columns).joined(separator: ", ") + ")"
            return Array(repeating: row, count: rows).joined(separator: ", ")
        }
        func answer(_ event: IncomingEvent, sequence: Int64, fingerprint: [UInt8]) -> Result<IngestWritten, any Error> {
            fingerprint == event.fingerprint
                ? .success(IngestWritten(receipt: IngestReceipt(id: event.id, sequence: sequence, isDuplicate: true)))
                : .failure(IngestError.conflict(id: event.id))
        }

        let ids = Array(Set(events.map(\.id)))
        var stored: [String: (sequence: Int64, fingerprint: [UInt8])] = [:]
        for row in try await db.rows(
            "SELECT id, sequence, fingerprint FROM events WHERE id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))", ids
        ) {
            stored[try row.string(0)] = (try row.int64(1), try row.bytes(2))
        }

        // New events in arrival order; a repeat of one of them waits for its first occurrence.
        var fresh: [Int] = []
        var firstOccurrence: [String: Int] = [:]
        var newPerUser: [String: Int64] = [:]
        for (index, event) in events.enumerated() where stored[event.id] == nil && firstOccurrence[event.id] == nil {
            firstOccurrence[event.id] = index
            fresh.append(index)
            newPerUser[event.userID, default: 0] += 1
        }
        var nextSequence: [String: Int64] = [:]
        var handedOff: [String: VerificationTask] = [:]
        if !newPerUser.isEmpty {
            let users = newPerUser.keys.sorted()
            for row in try await db.rows("""
                INSERT INTO user_sequences (user_id, last_sequence) VALUES \(placeholders(users.count, 2))
                ON CONFLICT (user_id) DO UPDATE SET last_sequence = last_sequence + excluded.last_sequence
                RETURNING user_id, last_sequence
                """, users.flatMap { [$0, newPerUser[$0]!] as [any SQLiteBind] }) {
                let user = try row.string(0)
                nextSequence[user] = try row.int64(1) - newPerUser[user]! + 1
            }
            var eventValues: [any SQLiteBind] = []
            var workValues: [any SQLiteBind] = []
            for index in fresh {
                let event = events[index]
                guard let sequence = nextSequence[event.userID] else { throw StoreError.unexpected("sequence upsert returned no row") }
                nextSequence[event.userID] = sequence + 1
                stored[event.id] = (sequence, event.fingerprint)
                eventValues += [event.id, event.userID, sequence, event.type.rawValue, event.occurredAt, db.now,
                                Blob(event.fingerprint), event.phoneNumber, event.echo?.serviceProvider, event.echo?.authorization.revealed,
                                event.oauth2?.accessToken.revealed, event.path.rawValue]
            }
            let lease = handOff(fresh.count)
            let leaseEnd = lease.map { db.now + $0.lease.microseconds }
            for index in fresh {
                // A leased item is due when its lease ends, as a claim leaves it.
                workValues += [events[index].id, leaseEnd ?? db.now, lease == nil ? 0 : 1, lease?.owner, leaseEnd, db.now]
            }
            try await db.run("""
                INSERT INTO events (id, user_id, sequence, type, occurred_at, received_at, fingerprint,
                                    pushed_phone_number, echo_service_provider, echo_authorization, oauth2_access_token, path)
                VALUES \(placeholders(fresh.count, 12))
                """, eventValues)
            let items = try await db.rows("""
                INSERT INTO work_items (kind, event_id, due_at, attempts, lease_owner, lease_expires_at, created_at)
                VALUES \(placeholders(fresh.count, 6).replacingOccurrences(of: "(?", with: "('verify', ?"))
                RETURNING id, event_id
                """, workValues)
            if lease != nil {
                for row in items {
                    let eventID = try row.string(1)
                    guard let index = firstOccurrence[eventID], let sequence = stored[eventID]?.sequence else { continue }
                    let event = events[index]
                    handedOff[eventID] = VerificationTask(
                        workItemID: try row.int64(0), eventID: eventID, type: event.type, userID: event.userID, sequence: sequence,
                        occurredAt: event.occurredAt, pushedPhoneNumber: event.phoneNumber, echo: event.echo, oauth2: event.oauth2,
                        attempts: 1)
                }
            }
        }
        return events.enumerated().map { index, event in
            guard let row = stored[event.id] else { return .failure(StoreError.unexpected("an event of a batch got no answer")) }
            if firstOccurrence[event.id] == index {
                let task = handedOff[event.id]
                return .success(IngestWritten(receipt: IngestReceipt(id: event.id, sequence: row.sequence, isDuplicate: false,
                                                                     handedOff: task != nil), handedOff: task))
            }
            return answer(event, sequence: row.sequence, fingerprint: row.fingerprint)
        }
    }

    public func event(id: String) async throws -> StoredEvent? {
        try await session.read { db in
            try await db.row("SELECT \(StoredEvent.columns) FROM events e WHERE e.id = ?1", [id]).map(StoredEvent.init(row:))
        }
    }

    /// No statement once the migrations are known applied (`RememberedReadiness`).
    public func readiness() async -> Readiness {
        if session.isClosed { return .notReady("the embedded SQLite store is closed") }
        return await migrationsReadiness.readiness { [self] in
            do {
                let pending = try await pendingMigrations()
                return pending.isEmpty ? .ready : .notReady("migrations pending: \(pending.map(String.init).joined(separator: ", "))")
            } catch let error as MigrationError {
                return .notReady(error.description)
            } catch {
                return .notReady("database unreachable")
            }
        }
    }

    /// A commit here is on this machine's disk, and nowhere else: `serve` refuses
    /// `ECHORELAY_DURABILITY=standby` on the embedded store, so there is nothing to wait for.
    public func confirmDurable() async throws {}
}
