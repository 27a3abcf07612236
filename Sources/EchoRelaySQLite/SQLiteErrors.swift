import EchoRelayCore
import EchoRelaySchema
import SQLiteNIO

/// Why the embedded store could not be opened.
public enum SQLiteStoreError: Error, Equatable, CustomStringConvertible {
    /// Another process (or another store in this process) has the file open.
    case locked(path: String)
    /// The file could not be created, opened or set up.
    case cannotOpen(path: String, reason: String)

    public var description: String {
        switch self {
        case .locked(let path):
            "the database file \(path) is in use by another EchoRelay process. The embedded SQLite store serves "
                + "one process only: stop the other process, or point this one at another file. To run several "
                + "processes on one database, use PostgreSQL (ECHORELAY_DATABASE_URL=postgres://…)"
        case .cannotOpen(let path, let reason):
            "cannot open the database file \(path): \(reason)"
        }
    }
}

extension StoreError {
    /// Maps a SQLite failure to a store error whose text is safe to log: SQLite's messages
    /// name tables, columns and constraints, never bound values. Domain errors (a replay
    /// refused, an ingest conflict…) and store errors pass through as they are.
    static func wrapSQLite(_ error: any Error) -> any Error {
        switch error {
        case is StoreError, is CancellationError, is ReplayError, is IngestError, is SubscriptionCursorError,
             is AccessTokenNameError, is SQLiteStoreError, is MigrationError, is SecretSealerError, is SubscriptionLimitReached:
            return error
        case let error as SQLiteError:
            let text = "SQLiteError(\(error.reason): \(error.message))"
            return isTransient(error) ? StoreError.unavailable(text) : StoreError.unexpected(text)
        default:
            // The thread pool SQLiteNIO runs on is gone: the process is shutting down.
            if String(reflecting: type(of: error)).contains("ThreadPool") {
                return StoreError.unavailable("the SQLite thread pool is not running")
            }
            return StoreError.unexpected(String(describing: type(of: error)))
        }
    }

    /// True when trying again later may succeed (a busy or locked file, a full disk, an I/O
    /// error), so callers answer 503 rather than 500.
    private static func isTransient(_ error: SQLiteError) -> Bool {
        switch error.reason {
        case .full, .noMemory, .interrupt, .proto, .misuse:
            return true
        default:
            let name = String(describing: error.reason)
            return ["busy", "locked", "ioError", "cantOpen", "readOnly", "readonly"].contains { name.hasPrefix($0) }
        }
    }
}
