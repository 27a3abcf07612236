import EchoRelayCore
import PostgresNIO

/// `ECHORELAY_DURABILITY=standby`: a commit is acknowledged only once a physical standby has
/// flushed the WAL that holds it.
///
/// Right after the commit, on the connection that made it (so on the same server), it reads
/// the primary's WAL insert position, which is past the end of every commit record written so
/// far, ours included, whatever `synchronous_commit` says. It then compares it with the flush
/// position each standby reports to its WAL sender (`pg_stat_replication.flush_lsn`): a
/// standby past it has our commit on its own disk, so a promoted standby holds it. This does
/// not depend on `synchronous_standby_names`, which a failover manager empties exactly when a
/// primary is left alone (pg_auto_failover's `wait_primary`); with a synchronous standby the
/// first look already confirms, so it costs one round trip per commit, and a group commit pays
/// it once for its whole batch.
///
/// Logical replication's senders (and `pg_basebackup`'s) do not count: they keep no copy of the
/// WAL. Seeing the standbys' positions needs `pg_monitor` (or `pg_read_all_stats`); without it
/// PostgreSQL shows every column but the sender's pid as null, and this says so rather than
/// waiting. A standby the role can see whose `flush_lsn` is still null (one that has just
/// connected and not reported yet) is behind, and waited for.
struct StandbyConfirmation: Sendable {
    /// How long a commit may wait for a standby that is connected but behind. With none
    /// connected, it fails at once.
    let wait: Duration

    private static let look: PostgresQuery = """
        WITH target AS (SELECT pg_current_wal_insert_lsn() AS lsn),
             standbys AS (
                 SELECT r.pid, r.state, r.flush_lsn FROM pg_stat_replication r
                 WHERE (r.state IN ('streaming', 'catchup') OR r.state IS NULL)  -- null: hidden from this role
                   AND NOT EXISTS (SELECT 1 FROM pg_replication_slots s WHERE s.active_pid = r.pid AND s.slot_type = 'logical'))
        SELECT target.lsn::text, count(standbys.pid), count(standbys.state), coalesce(bool_or(standbys.flush_lsn >= target.lsn), false)
        FROM target LEFT JOIN standbys ON true GROUP BY target.lsn
        """

    /// Returns once a standby holds everything committed on `connection`'s server so far;
    /// throws `StandbyUnconfirmed` if none does within `wait`.
    func confirm(on connection: PostgresConnection, logger: Logger) async throws {
        let deadline = ContinuousClock.now + wait
        var (target, state) = try await Self.first(on: connection, logger: logger)
        var pause = Duration.milliseconds(1)
        while true {
            switch state {
            case .confirmed:
                return
            case .noStandby:
                throw StandbyUnconfirmed("the primary has no streaming standby (ECHORELAY_DURABILITY=standby)")
            case .positionsHidden:
                throw StandbyUnconfirmed("the database role cannot see its standbys' positions: GRANT pg_monitor TO the role in ECHORELAY_DATABASE_URL")
            case .behind:
                guard ContinuousClock.now + pause < deadline else {
                    throw StandbyUnconfirmed("no standby flushed it within \(DurationText.format(wait))")
                }
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .milliseconds(20))
                state = try await Self.again(target, on: connection, logger: logger)
            }
        }
    }

    /// Each of `results`' successes, once a standby holds their commit; each becomes the
    /// failure if none does in time. Errors stay as they are.
    func confirming<Output>(
        _ results: [Result<Output, any Error>], on connection: PostgresConnection, logger: Logger
    ) async -> [Result<Output, any Error>] {
        guard results.contains(where: { if case .success = $0 { true } else { false } }) else { return results }
        do {
            try await confirm(on: connection, logger: logger)
            return results
        } catch {
            let failure = error is StandbyUnconfirmed ? error : StoreError.wrap(error)
            return results.map { if case .success = $0 { .failure(failure) } else { $0 } }
        }
    }

    enum State { case confirmed, behind, noStandby, positionsHidden }

    private static func first(on connection: PostgresConnection, logger: Logger) async throws -> (String, State) {
        for try await (lsn, standbys, visible, confirmed) in try await connection.query(look, logger: logger)
            .decode((String, Int, Int, Bool).self) {
            return (lsn, state(standbys: standbys, visible: visible, confirmed: confirmed))
        }
        throw StoreError.unexpected("the standby positions query returned no row")
    }

    private static func again(_ target: String, on connection: PostgresConnection, logger: Logger) async throws -> State {
        let query: PostgresQuery = """
            SELECT count(*), count(r.state), coalesce(bool_or(r.flush_lsn >= \(target)::pg_lsn), false)
            FROM pg_stat_replication r
            WHERE (r.state IN ('streaming', 'catchup') OR r.state IS NULL)  -- null: hidden from this role
              AND NOT EXISTS (SELECT 1 FROM pg_replication_slots s WHERE s.active_pid = r.pid AND s.slot_type = 'logical')
            """
        for try await (standbys, visible, confirmed) in try await connection.query(query, logger: logger).decode((Int, Int, Bool).self) {
            return state(standbys: standbys, visible: visible, confirmed: confirmed)
        }
        throw StoreError.unexpected("the standby positions query returned no row")
    }

    private static func state(standbys: Int, visible: Int, confirmed: Bool) -> State {
        if confirmed { return .confirmed }
        if standbys == 0 { return .noStandby }
        if visible == 0 { return .positionsHidden }
        return .behind
    }
}
