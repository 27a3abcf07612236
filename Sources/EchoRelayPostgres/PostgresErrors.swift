import _ConnectionPoolModule
import EchoRelayCore
import PostgresNIO

extension PSQLError {
    /// The SQLSTATE of a server error (`23505` is a unique violation), if it is one.
    var sqlState: String? { serverInfo?[.sqlState] }

    func isUniqueViolation(constraint: String) -> Bool {
        sqlState == "23505" && serverInfo?[.constraintName] == constraint
    }

    /// A unique violation of any key. Ingest takes one for an event id stored before and
    /// answers from the stored rows, whatever the key's name: on tables partitioned by user
    /// (docs/scaling.md) PostgreSQL names the partition's key (`events_p2_pkey`), not
    /// `events_pkey`. If no row has the id, the violation was another key's, and says so.
    var isUniqueViolation: Bool { sqlState == "23505" }

    /// True when the database could not be reached or the connection broke: the request
    /// may succeed later, so callers answer 503 rather than 500.
    var isConnectionFailure: Bool {
        switch code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            true
        default:
            // 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now, 08xxx
            // connection exceptions, 25006 a write on a host that turned read-only (a failover).
            sqlState.map { $0.hasPrefix("08") || ["57P01", "57P02", "57P03", "25006"].contains($0) } ?? false
        }
    }
}

/// A description of a database error that is safe to log. PostgreSQL's DETAIL for some
/// violations repeats the whole failing row, which may hold echo credentials, so only the
/// code, SQLSTATE, constraint and message are kept.
public func safeDescription(of error: any Error) -> String {
    guard let error = error as? PSQLError else {
        if let transaction = error as? PostgresTransactionError {
            return "transaction failed: " + [transaction.beginError, transaction.closureError,
                                             transaction.commitError, transaction.rollbackError]
                .compactMap { $0.map(safeDescription(of:)) }.joined(separator: "; ")
        }
        if let pool = ConnectionPoolFailure(error) { return pool.description }
        return String(describing: type(of: error))
    }
    var parts = ["code: \(error.code)"]
    if let sqlState = error.sqlState { parts.append("sqlState: \(sqlState)") }
    if let constraint = error.serverInfo?[.constraintName] { parts.append("constraint: \(constraint)") }
    if let message = error.serverInfo?[.message] { parts.append("message: \(message)") }
    return "PSQLError(" + parts.joined(separator: ", ") + ")"
}

/// postgres-nio's pool errors (`ConnectionPoolError`), said in words: they hold nothing of
/// the URL, but their own text names internal cases.
enum ConnectionPoolFailure: CustomStringConvertible {
    /// Every connection attempt failed for about a minute: the database is unreachable.
    case unreachable
    case shutDown
    case cancelled

    init?(_ error: any Error) {
        switch error as? ConnectionPoolError {
        case .connectionCreationCircuitBreakerTripped?: self = .unreachable
        case .poolShutdown?: self = .shutDown
        case .requestCancelled?: self = .cancelled
        default: return nil
        }
    }

    var description: String {
        switch self {
        case .unreachable: "no connection to the database could be made for a minute (the log has each attempt's error)"
        case .shutDown: "the database connection pool has shut down"
        case .cancelled: "the wait for a database connection was cancelled"
        }
    }
}

extension StoreError {
    /// Maps a PostgreSQL error to a store error with a description that is safe to log.
    static func wrap(_ error: any Error) -> any Error {
        if error is StoreError || error is CancellationError || error is SecretSealerError || error is StandbyUnconfirmed { return error }
        if let error = error as? PSQLError, error.isConnectionFailure {
            return StoreError.unavailable(safeDescription(of: error))
        }
        if let pool = ConnectionPoolFailure(error), pool == .unreachable {
            return StoreError.unavailable(pool.description)
        }
        return StoreError.unexpected(safeDescription(of: error))
    }
}
