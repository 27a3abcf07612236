import EchoRelayCore
import EchoRelayQueue
import EchoRelayPostgres
import EchoRelaySchema
import EchoRelaySQLite
import PostgresNIO
import ServiceLifecycle

/// Where EchoRelay keeps its data, from `ECHORELAY_DATABASE_URL`: PostgreSQL for production
/// and several processes, or the embedded SQLite file for one process.
public enum DatabaseLocation: Sendable, Equatable {
    case postgres(Secret)
    case sqlite(path: String)

    /// The embedded default, in the working folder.
    public static let defaultSQLitePath = "echorelay.sqlite"

    /// `postgres://…` / `postgresql://…`, or `sqlite:PATH`; nil means the embedded default.
    public static func parse(_ url: Secret?) throws -> DatabaseLocation {
        guard let text = url?.revealed, !text.isEmpty else { return .sqlite(path: defaultSQLitePath) }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") { return .postgres(Secret(text)) }
        if text.hasPrefix("sqlite:") {
            var path = String(text.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }  // sqlite:///abs/path
            guard !path.isEmpty else {
                throw ConfigurationError(setting: "ECHORELAY_DATABASE_URL", reason: "sqlite: needs a file path, such as sqlite:/var/lib/echorelay/echorelay.sqlite")
            }
            return .sqlite(path: path)
        }
        // The text may hold a password, so it is not repeated.
        throw ConfigurationError(
            setting: "ECHORELAY_DATABASE_URL",
            reason: "must be a postgres://user:password@host:5432/database URL or sqlite:PATH (unset: the embedded echorelay.sqlite)"
        )
    }

    /// Whether opening failed because a running `serve` holds the embedded file.
    public static func isHeldByAnotherProcess(_ error: any Error) -> Bool {
        if case SQLiteStoreError.locked = error { return true }
        return false
    }
}

/// The opened store and what comes with it: the services that must run beside it, how to
/// tell other processes about new work, and how to migrate it. `serve` and every command that
/// works on the database open their store here.
struct StoreBackend {
    let store: any EchoRelayStore
    /// Started before the workers and stopped after them.
    let services: [any Service]
    /// Tells workers in other processes that new work exists (PostgreSQL only).
    let announce: @Sendable () -> Void
    /// Applies the pending migrations; returns their numbers.
    let migrate: @Sendable () async throws -> [Int]
    /// The migrations not applied yet.
    let pendingMigrations: @Sendable () async throws -> [Int]
    /// The embedded store, for the first-run settings; nil on PostgreSQL.
    let sqlite: SQLiteEventStore?

    /// This process's workers, for a store that wakes them when another process announces
    /// work (PostgreSQL's LISTEN) and announces what they make due.
    struct Workers {
        let wakes: [WakeSignal]
        let processID: String
    }

    /// Opens the store at `location`. `workers` is nil for a one-shot command, which has none:
    /// it then neither listens nor announces. `poolLogger` is the PostgreSQL client's
    /// (default: `logger`).
    static func open(
        _ location: DatabaseLocation, workers: Workers? = nil, sealer: SecretSealer? = nil,
        ingestWait: Duration = .seconds(10), durability: Durability = .local, ingestWakesOtherProcesses: Bool = false,
        logger: Logger, poolLogger: Logger? = nil
    ) async throws -> StoreBackend {
        switch location {
        case .postgres(let url):
            let endpoints = try DatabaseLocation.endpoints(url)
            if workers != nil, endpoints.configurations.count > 1 {
                logger.info("database hosts", metadata: ["db.hosts": "\(endpoints.names.joined(separator: ","))",
                                                         "db.target": "\(endpoints.sessions.rawValue)"])
            }
            let client = DatabaseClient(endpoints: endpoints, logger: poolLogger ?? logger)
            let notifications = workers.map {
                PostgresWorkNotifications(client: client, localWakes: $0.wakes, processID: $0.processID, logger: logger)
            }
            let migrator = Migrator(client: client, logger: logger)
            return StoreBackend(
                store: PostgresEventStore(
                    client: client, logger: logger, sealer: sealer, ingestWait: ingestWait, durability: durability,
                    wakeOtherProcesses: ingestWakesOtherProcesses ? workers.map { WakeLimiter(payload: $0.processID) } : nil,
                    wakeOnOutcomes: workers.map { WakeLimiter(payload: $0.processID) }
                ),
                services: [client] + (notifications.map { [$0] } ?? []),
                announce: { notifications?.announce() },
                migrate: { try await StorePreparationError.wrapping { try await migrator.migrate() } },
                pendingMigrations: { try await StorePreparationError.wrapping { try await migrator.pending() } },
                sqlite: nil
            )
        case .sqlite(let path):
            // Takes the file's lock: a second process on the same file stops here, with a clear error.
            let store = try await SQLiteEventStore.open(path: path, logger: logger, sealer: sealer)
            return StoreBackend(
                store: store, services: [SQLiteStoreCloser(store: store)], announce: {},
                migrate: { try await store.migrate() }, pendingMigrations: { try await store.pendingMigrations() }, sqlite: store
            )
        }
    }
}

/// A store opened for one command (`migrate`, `tokens`, `reseal`), as `serve` opens it.
public struct OpenedStore: Sendable {
    public let store: any EchoRelayStore
    /// Applies the pending migrations; returns their numbers.
    public let migrate: @Sendable () async throws -> [Int]
    /// The migrations not applied yet.
    public let pendingMigrations: @Sendable () async throws -> [Int]
}

/// Migrating (or reading the migrations of) a PostgreSQL database failed for a reason other
/// than the migrations themselves (`MigrationError`): PSQLError's own description hides the
/// cause, and its detail may repeat a row, so this one is safe to print.
public struct StorePreparationError: Error, CustomStringConvertible {
    public let description: String

    static func wrapping<Value>(_ work: () async throws -> Value) async throws -> Value {
        do {
            return try await work()
        } catch let error as MigrationError {
            throw error
        } catch {
            throw StorePreparationError(description: "could not prepare the database: \(safeDescription(of: error))")
        }
    }
}

extension DatabaseLocation {
    /// Opens the store here for the length of `body` — PostgreSQL's client running, or the
    /// embedded file open (and locked) — and closes it afterwards, whatever `body` does. It
    /// migrates nothing by itself. `poolLogger` is the PostgreSQL client's (default: `logger`).
    public func withStore<Result: Sendable>(
        sealer: SecretSealer? = nil, logger: Logger, poolLogger: Logger? = nil,
        _ body: @Sendable (OpenedStore) async throws -> Result
    ) async throws -> Result {
        let backend = try await StoreBackend.open(self, sealer: sealer, logger: logger, poolLogger: poolLogger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            // Outside a ServiceGroup, cancelling a service is its stop: the client closes its
            // connections, and the embedded store closes its file.
            for service in backend.services { group.addTask { try await service.run() } }
            defer { group.cancelAll() }
            return try await body(OpenedStore(
                store: backend.store, migrate: backend.migrate, pendingMigrations: backend.pendingMigrations
            ))
        }
    }

    /// The hosts of a PostgreSQL URL, or the setting's error (which never repeats the URL).
    static func endpoints(_ url: Secret) throws -> DatabaseEndpoints {
        do throws(DatabaseURLError) {
            return try DatabaseURL.endpoints(url.revealed)
        } catch {
            throw ConfigurationError(setting: "ECHORELAY_DATABASE_URL", reason: error.reason)
        }
    }
}

/// Closes the embedded store (and so releases its file lock) once everything that uses it
/// has stopped.
struct SQLiteStoreCloser: Service, CustomStringConvertible {
    var description: String { "SQLiteStore" }
    let store: SQLiteEventStore

    func run() async throws {
        try? await gracefulShutdown()
        try await store.close()
    }
}
