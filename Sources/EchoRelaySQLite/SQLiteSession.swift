import EchoRelayCore
import SQLiteNIO
import Synchronization

/// The one SQLite connection of a store, used by one operation at a time.
///
/// SQLite has a single writer per file, and a store's multi-statement steps (claim, finish,
/// replay…) must not interleave, so every operation waits its turn here and then has the
/// connection to itself. An actor alone would not do: it lets another call in at every
/// `await`, in the middle of a transaction.
final class SQLiteSession: Sendable {
    private let gate = SerialGate()
    private let state: Mutex<(connection: SQLiteConnection, lock: FileLock)?>
    /// The writers whose work sits in the open transaction, waiting for its commit.
    private let sharing = Mutex<[CheckedContinuation<Result<Void, any Error>, Never>]>([])
    /// How many more writers the open transaction takes: those already waiting when it
    /// began, as a group commit takes what queued during the previous one, so that a steady
    /// stream of writers does not hold the first one's answer for ever.
    private let joinable = Mutex(0)
    /// The most writers one transaction takes before it commits however many wait.
    static let writersPerCommit = 64
    private let commitCount = Mutex(0)

    /// The write transactions committed so far.
    var commits: Int { commitCount.withLock { $0 } }
    /// Operations waiting for their turn.
    var waiting: Int { gate.waiting }

    init(connection: SQLiteConnection, lock: FileLock) {
        state = Mutex((connection, lock))
    }

    /// Runs `body` alone on the connection, outside any transaction (one statement is its own
    /// transaction). SQLite errors come out as `StoreError`s; domain errors as they are.
    func read<T>(_ body: (SQLiteDB) async throws -> T) async throws -> T {
        await gate.acquire(writing: false)
        defer { gate.release() }
        guard let connection = state.withLock({ $0?.connection }) else {
            throw StoreError.unavailable("the embedded SQLite store is closed")
        }
        do {
            return try await body(SQLiteDB(connection: connection, now: SQLiteTime.now()))
        } catch {
            throw StoreError.wrapSQLite(error)
        }
    }

    /// Runs `body` alone in a `BEGIN IMMEDIATE` … `COMMIT` transaction: it either happens
    /// whole or not at all, and returns only once committed. IMMEDIATE takes the write lock at
    /// once, so a step that reads and then writes never finds its snapshot stale. The writers
    /// waiting when a transaction begins share it, each in a savepoint of its own (so one that
    /// fails is undone alone), and its commit: with `synchronous = FULL` a commit is a
    /// sync of the log, so the ingests, outcomes, attempts and claims that arrive together pay
    /// for one, and accepting events does not take the single writer's turns from delivering.
    func write<T>(_ body: (SQLiteDB) async throws -> T) async throws -> T {
        await gate.acquire(writing: true)
        guard let connection = state.withLock({ $0?.connection }) else {
            let waiting = sharing.withLock { writers in defer { writers = [] }; return writers }
            gate.release()
            for writer in waiting { writer.resume(returning: .failure(StoreError.unavailable("the embedded SQLite store is closed"))) }
            throw StoreError.unavailable("the embedded SQLite store is closed")
        }
        let db = SQLiteDB(connection: connection, now: SQLiteTime.now())
        let joined = sharing.withLock { !$0.isEmpty }
        if !joined { joinable.withLock { $0 = min(gate.waiting, Self.writersPerCommit - 1) } }
        var result: Result<T, any Error>
        do {
            if !joined { try await db.run("BEGIN IMMEDIATE") }
            try await db.run("SAVEPOINT writer")
            do {
                result = .success(try await body(db))
            } catch {
                result = .failure(error)
            }
            if case .failure = result { try await db.run("ROLLBACK TO writer") }
            try await db.run("RELEASE writer")
        } catch {
            // The transaction itself failed (SQLite rolls back on some I/O errors): the work
            // of every writer in it is gone.
            _ = try? await db.run("ROLLBACK")
            let waiting = sharing.withLock { writers in defer { writers = [] }; return writers }
            gate.release()
            let failure = StoreError.wrapSQLite(error)
            for writer in waiting { writer.resume(returning: .failure(failure)) }
            throw failure
        }
        let handsOn = gate.nextIsWriting && joinable.withLock { left in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        let committed: Result<Void, any Error>
        if handsOn {
            // The next writer goes on in this transaction; its commit answers this one too.
            committed = await withCheckedContinuation { continuation in
                sharing.withLock { $0.append(continuation) }
                gate.release()
            }
        } else {
            committed = await Result { try await db.run("COMMIT") }.mapError { StoreError.wrapSQLite($0) }
            if case .failure = committed { _ = try? await db.run("ROLLBACK") } else { commitCount.withLock { $0 += 1 } }
            let waiting = sharing.withLock { writers in defer { writers = [] }; return writers }
            gate.release()
            for writer in waiting { writer.resume(returning: committed) }
        }
        try committed.get()
        do {
            return try result.get()
        } catch {
            throw StoreError.wrapSQLite(error)
        }
    }

    /// Closes the connection, then releases the file lock: in that order, because closing
    /// our descriptor of the file while SQLite still uses it would drop SQLite's own locks.
    /// A close that fails keeps both, so the connection is never dropped open (SQLiteNIO
    /// asserts on that) and the file is not released while SQLite may still hold it.
    func close() async throws {
        await gate.acquire(writing: false)
        defer { gate.release() }
        guard let (connection, lock) = state.withLock({ $0 }) else { return }
        do {
            try await connection.close()
        } catch {
            throw StoreError.wrapSQLite(error)
        }
        state.withLock { $0 = nil }
        lock.release()
    }

    var isClosed: Bool { state.withLock { $0 == nil } }

    /// A store dropped without `close()` (a failing test, say) still closes its connection
    /// and then frees the file; SQLiteNIO asserts on a connection freed while open.
    deinit {
        guard let (connection, lock) = state.withLock({ $0 }) else { return }
        connection.close().whenComplete { _ in lock.release() }
    }
}

/// The connection as an operation sees it, with the one "now" of that operation: like
/// PostgreSQL's now(), every statement of a transaction sees the same time.
struct SQLiteDB {
    let connection: SQLiteConnection
    /// Microseconds since the Unix epoch, taken when the operation got the connection.
    let now: Int64

    /// Runs one statement and returns its rows. Only one statement: SQLite prepares the first
    /// and ignores the rest of the text.
    @discardableResult
    func rows(_ sql: String, _ binds: [any SQLiteBind] = []) async throws -> [Row] {
        try await connection.query(sql, binds.map(\.sqliteData)).map(Row.init)
    }

    func run(_ sql: String, _ binds: [any SQLiteBind] = []) async throws {
        try await rows(sql, binds)
    }

    /// The first row, or nil.
    func row(_ sql: String, _ binds: [any SQLiteBind] = []) async throws -> Row? {
        try await rows(sql, binds).first
    }

    /// `BEGIN IMMEDIATE` … `COMMIT`, rolled back if `body` throws.
    func transaction<T>(_ body: () async throws -> T) async throws -> T {
        try await run("BEGIN IMMEDIATE")
        do {
            let result = try await body()
            try await run("COMMIT")
            return result
        } catch {
            // SQLite may already have rolled back (some I/O errors do); that is fine.
            _ = try? await run("ROLLBACK")
            throw error
        }
    }
}

/// A first-come, first-served lock for async code: one holder at a time, the others wait
/// (without a thread) in order.
final class SerialGate: Sendable {
    private struct State {
        var held = false
        var waiters: [(continuation: CheckedContinuation<Void, Never>, writing: Bool)] = []
    }
    private let state = Mutex(State())

    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Whether the next in line waits to write (`SQLiteSession.write`).
    var nextIsWriting: Bool { state.withLock { $0.waiters.first?.writing ?? false } }

    func acquire(writing: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state in
                if state.held {
                    state.waiters.append((continuation, writing))
                    return false
                }
                state.held = true
                return true
            }
            if granted { continuation.resume() }
        }
    }

    /// Hands the lock to the next waiter, if any (it stays held), or frees it.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.held = false
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }
}
