import _ConnectionPoolModule
import EchoRelayPostgres
import Testing

/// What a command or a log line says about a database error: the cause in words, never the
/// URL (which may hold a password) nor a row.
@Suite struct DatabaseErrorDescriptionTests {
    @Test func thePoolsErrorsAreSaidInWords() {
        #expect(safeDescription(of: ConnectionPoolError.connectionCreationCircuitBreakerTripped)
                == "no connection to the database could be made for a minute (the log has each attempt's error)")
        #expect(safeDescription(of: ConnectionPoolError.poolShutdown) == "the database connection pool has shut down")
        #expect(safeDescription(of: ConnectionPoolError.requestCancelled) == "the wait for a database connection was cancelled")
    }

    @Test func anyOtherErrorIsNamedByItsTypeOnly() {
        struct CarriesARow: Error, CustomStringConvertible { var description: String { "row (secret-token)" } }
        #expect(safeDescription(of: CarriesARow()) == "CarriesARow")
    }
}
