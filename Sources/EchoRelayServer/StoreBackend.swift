import EchoRelayCore
import EchoRelayPostgres
import EchoRelaySQLite
import Foundation
import Logging
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
}

/// The opened store and what comes with it: the services that must run beside it, how to
/// tell other processes about new work, and how to migrate it.
struct StoreBackend {
    let store: any EchoRelayStore
    /// Started before the workers and stopped after them.
    let services: [any Service]
    /// Tells workers in other processes that new work exists (PostgreSQL only).
    let announce: @Sendable () -> Void
    let migrate: @Sendable () async throws -> [Int]
    /// The embedded store, for the first-run settings; nil on PostgreSQL.
    let sqlite: SQLiteEventStore?

    static func open(
        _ location: DatabaseLocation, localWakes: [WakeSignal], processID: String, sealer: SecretSealer? = nil,
        metrics: RelayMetrics = RelayMetrics(), ingestWait: Duration = .seconds(10), ingestWakesOtherProcesses: Bool = false,
        verificationHandOffs: VerificationInbox? = nil,
        logger: Logger
    ) async throws -> StoreBackend {
        switch location {
        case .postgres(let url):
            let endpoints: DatabaseEndpoints
            do throws(DatabaseURLError) {
                endpoints = try DatabaseURL.endpoints(url.revealed)
            } catch {
                throw ConfigurationError(setting: "ECHORELAY_DATABASE_URL", reason: error.reason)
            }
            if endpoints.configurations.count > 1 {
                logger.info("database hosts", metadata: ["db.hosts": "\(endpoints.names.joined(separator: ","))",
                                                         "db.target": "\(endpoints.sessions.rawValue)"])
            }
            let client = DatabaseClient(endpoints: endpoints, logger: logger)
            let notifications = PostgresWorkNotifications(client: client, localWakes: localWakes, processID: processID, logger: logger)
            return StoreBackend(
                store: PostgresEventStore(
                    client: client, logger: logger, sealer: sealer, metrics: metrics, ingestWait: ingestWait,
                    wakeOtherProcesses: ingestWakesOtherProcesses ? WakeLimiter(payload: processID) : nil,
                    wakeOnOutcomes: WakeLimiter(payload: processID), verificationHandOffs: verificationHandOffs
                ),
                services: [client, notifications],
                announce: { notifications.announce() },
                migrate: { try await Migrator(client: client, logger: logger).migrate() },
                sqlite: nil
            )
        case .sqlite(let path):
            // Takes the file's lock: a second process on the same file stops here, with a clear error.
            let store = try await SQLiteEventStore.open(path: path, logger: logger, sealer: sealer, metrics: metrics, ingestWait: ingestWait)
            return StoreBackend(
                store: store, services: [SQLiteStoreCloser(store: store)], announce: {},
                migrate: { try await store.migrate() }, sqlite: store
            )
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
