import EchoRelayCore
import EchoRelayQueue
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The PostgreSQL client of a store: a connection pool per host of the database URL, and
/// every statement sent to the host that will do (with several hosts, the one that takes
/// writes). postgres-nio's client takes one host, so the choice is made here, around it.
///
/// The host is chosen when first needed, by asking each host in the URL's order whether its
/// sessions are read-only (`transaction_read_only`) or, for `target_session_attrs=primary`,
/// whether it is in recovery. The choice is dropped, and made again for the next statement,
/// when a statement fails in a way that says the host went away or no longer takes writes
/// (the connection refused or broken, `57P01` admin shutdown, `57P03` cannot connect now,
/// `25006` read-only transaction), and when the host stops answering the check made every
/// `checkInterval` on a connection of its own. A dropped host's pool is replaced by a new
/// one, so the statements still waiting for one of its connections fail at once (a `503`)
/// instead of waiting for a server that is gone. While no host will do, every statement fails
/// at once with `StoreError.unavailable`.
///
/// A connection leased with a time limit (the group commits' flushes) that is held past it
/// means its host stopped answering without closing anything (a frozen server, a network path
/// that drops packets): the connection is closed and the host dropped as above, with one host
/// as with several, so the statement fails and what queued behind it goes to a new pool,
/// instead of waiting until TCP gives up hours later. (With one host and `any`, dropping it
/// only replaces its pool: it is not checked, and stays the host in use.)
///
/// A statement sent through `query` or `execute` that is never answered (one written to a
/// connection that had just closed) fails shortly after its host is dropped, or after
/// `statementLimit` (`DatabaseClient+UnansweredStatements.swift`).
public final class DatabaseClient: Service, Sendable {
    /// A pool run by the caller (`init(_:)`): used as it is, nothing checked or replaced.
    let single: PostgresClient?
    /// Whether hosts are checked and chosen (several hosts, or a target other than `any`);
    /// otherwise the one host is always the one in use.
    private let checksHosts: Bool
    private let configurations: [PostgresClient.Configuration]
    /// Each host as `host:port`, for logs: no credentials.
    let names: [String]
    let sessions: DatabaseEndpoints.SessionAttributes
    let logger: Logger
    /// How long checking one host may take before it counts as unreachable.
    let probeTimeout: Duration
    /// How often the host in use is checked.
    let checkInterval: Duration
    /// While no host will do, how long a failed search is the answer before the next one.
    let retryInterval: Duration
    /// How long a statement sent through `query` or `execute` may go without an answer before
    /// its caller gets `StoreError.unavailable` and its host is dropped (a group commit's
    /// flush is abandoned after the same time by default).
    let statementLimit: Duration

    struct State {
        /// The pool of each host; a dropped host's is replaced.
        var pools: [PostgresClient]
        /// Whether each pool keeps `warmConnections` open: only the host in use's does.
        var warm: [Bool]
        /// The task running each pool, once `run()` started them.
        var running: [Task<Void, Never>?]
        /// One connection per host for the checks, apart from the pools' load; replaced with
        /// the pool.
        var monitors: [PostgresClient] = []
        var monitorsRunning: [Task<Void, Never>?] = []
        var stopped = false
        /// The host in use; nil until chosen, and after it failed.
        var chosen: Int?
        /// The connections leased through `withConnection` now, by pool, with a number each.
        var leases: [ObjectIdentifier: [Int: Leased]] = [:]
        var nextLease = 0
        /// The statements sent through `query` and `execute` and not answered yet, by number.
        var unanswered: [Int: Unanswered] = [:]
        var nextStatement = 0
        /// A search under way, shared by every caller that needs a host meanwhile.
        var search: Task<Int, any Error>?
        /// The last failed search: its answer, and until when it stands.
        var failed: (error: StoreError, until: ContinuousClock.Instant)?
        /// What is known of the host in use, for `/readyz` (`HostWatch`), and how many times
        /// it was said.
        var health = HostHealth.unknown {
            didSet { healthChanges += 1 }
        }
        var healthChanges = 0
    }

    let state: Mutex<State>

    public init(endpoints: DatabaseEndpoints, logger: Logger, probeTimeout: Duration = .seconds(2),
                checkInterval: Duration = .seconds(1), retryInterval: Duration = .milliseconds(250),
                statementLimit: Duration = .seconds(60)) {
        self.configurations = endpoints.configurations
        self.names = endpoints.names
        self.sessions = endpoints.sessions
        self.logger = logger
        self.probeTimeout = probeTimeout
        self.checkInterval = checkInterval
        self.retryInterval = retryInterval
        self.statementLimit = statementLimit
        self.single = nil
        self.checksHosts = endpoints.configurations.count > 1 || endpoints.sessions != .any
        // One host that is not checked is in use from the start; checked ones warm up when chosen.
        let warm = !checksHosts
        let pools = endpoints.configurations.map { Self.pool($0, warm: warm, logger: logger) }
        var state = State(pools: pools, warm: Array(repeating: warm, count: pools.count), running: Array(repeating: nil, count: pools.count))
        if checksHosts {
            state.monitors = endpoints.configurations.map { Self.monitor($0, probeTimeout: probeTimeout, logger: logger) }
            state.monitorsRunning = Array(repeating: nil, count: pools.count)
        } else {
            state.chosen = 0
        }
        self.state = Mutex(state)
    }

    /// One server's client, run by the caller: for tests and tools on one server.
    public init(_ client: PostgresClient, name: String = "the database", logger: Logger = Logger(label: "echorelay")) {
        self.single = client
        self.checksHosts = false
        self.configurations = []
        self.names = [name]
        self.sessions = .any
        self.logger = logger
        self.probeTimeout = .seconds(2)
        self.checkInterval = .seconds(1)
        self.retryInterval = .milliseconds(250)
        self.statementLimit = .seconds(60)
        self.state = Mutex(State(pools: [client], warm: [false], running: [nil]))
    }

    /// A host's pool. postgres-nio starts a timer task (a task group, two tasks and a
    /// libdispatch timer, armed and later fired) each time a connection goes back to the pool:
    /// a keep-alive timer, and an idle timer for connections past the pool's minimum. At
    /// several statements an event that was a third of serve's context switches. So the pool
    /// of the host in use is `warm`: it keeps `warmConnections` open, which the hot path's few
    /// concurrent statements use (the pool leases the lowest free one), and runs no keep-alive
    /// query: a connection that broke while idle fails its next statement, which drops the
    /// host and replaces the pool, as a server that went away does. The other hosts' pools
    /// open nothing (a standby needs no idle sessions, and a host that is down no retries).
    private static func pool(_ configuration: PostgresClient.Configuration, warm: Bool, logger: Logger) -> PostgresClient {
        var configuration = configuration
        if warm {
            configuration.options.keepAliveBehavior = nil
            configuration.options.minimumConnections = min(warmConnections, configuration.options.maximumConnections)
        }
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    /// The connections each pool keeps open: about as many as serve's hot path runs
    /// statements at once (ingest, outcome and attempt commits, claims, hand-off loads).
    public static let warmConnections = 8

    private static func monitor(_ configuration: PostgresClient.Configuration, probeTimeout: Duration, logger: Logger) -> PostgresClient {
        var configuration = configuration
        configuration.options.maximumConnections = 1
        configuration.options.connectTimeout = probeTimeout
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    /// Runs the pools (and, with several hosts, the checks) until cancelled or shut down gracefully.
    public func run() async {
        if let single {
            await single.run()
            return
        }
        state.withLock { state in
            for index in state.pools.indices {
                let pool = state.pools[index]
                state.running[index] = Task { await pool.run() }
            }
            for index in state.monitors.indices {
                let monitor = state.monitors[index]
                state.monitorsRunning[index] = Task { await monitor.run() }
            }
        }
        let watch = Task { await self.watchHostInUse() }
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.checkInterval)
                guard !Task.isCancelled else { break }
                self.dropHostsHeldPastTheirLimit()
                self.failUnansweredStatements()
                if self.checksHosts { await self.checkChosenHost() }
            }
        }
        // Its connection goes back to the pool before the pools close.
        watch.cancel()
        await watch.value
        let (running, unanswered) = state.withLock { state in
            state.stopped = true
            defer { state.unanswered = [:] }
            return (state.running + state.monitorsRunning, Array(state.unanswered.values))
        }
        // Nothing fails a lost statement from now on: what still waits is told at once.
        for statement in unanswered { _ = statement.fail(StoreError.unavailable("the database client stopped")) }
        for task in running { task?.cancel() }
        // A pool waits for its leased connections to come back; one whose statement was lost
        // never does, and must not hold the process's shutdown for ever. One bound for them
        // all: after a failover several may be stuck (the old primary's pool and its check's),
        // and 10 s each, one after another, held a stop past 30 s.
        let pools = running.compactMap { $0 }
        let closed = Mutex(0)
        let all = await awaitResult(within: Self.closeLimit) {
            for task in pools {
                await task.value
                closed.withLock { $0 += 1 }
            }
        }
        if case .failure = all {
            logger.warning("database pools did not close in time; leaving them", metadata: [
                "db.pools.open": "\(pools.count - closed.withLock { $0 })", "db.close_limit": "\(Self.closeLimit)",
            ])
        }
    }

    /// How long a stop waits for the pools to close once cancelled.
    static let closeLimit = Duration.seconds(10)

    // MARK: The same calls as PostgresClient's, on the host in use

    /// Runs `closure` on a connection of the host in use. With a `limit`, the host is dropped
    /// (its connections closed, its pool replaced) if `closure` still holds the connection that
    /// long after it was leased (checked every `checkInterval` while `run()` runs).
    public func withConnection<Result>(
        limit: Duration? = nil,
        isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        try await withConnection(limit: limit, isolation: isolation) { connection, _, _ in try await closure(connection) }
    }

    /// `withConnection`, telling `closure` also which host's pool lent the connection.
    func withConnection<Result>(
        limit: Duration? = nil,
        isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection, _ host: Int, _ pool: PostgresClient) async throws -> sending Result
    ) async throws -> sending Result {
        let (index, client) = try await host()
        do {
            return try await client.withConnection(isolation: isolation) { connection in
                // The pool can lend a connection that has just closed (its server crashed), and
                // a statement written to it is lost without an error: it would wait for ever.
                guard !connection.isClosed else { throw ClosedConnectionLent() }
                // Known while leased: a host dropped meanwhile closes it, so that a statement
                // stuck on a server that stopped answering fails instead of waiting forever.
                let lease = try leased(connection, from: index, client, limit: limit)
                defer { released(lease) }
                return try await closure(connection, index, client)
            }
        } catch {
            throw failed(index, client, error)
        }
    }

    public func withTransaction<Result>(
        logger: Logger,
        isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        try await withConnection(isolation: isolation) { connection in
            try await connection.withTransaction(logger: logger, isolation: isolation, closure)
        }
    }

    @discardableResult
    public func query(_ query: PostgresQuery, logger: Logger? = nil) async throws -> PostgresRowSequence {
        let (index, client) = try await host()
        do {
            return try await answered(index, client) { try await client.query(query, logger: logger) }
        } catch {
            throw failed(index, client, error)
        }
    }

    public func execute<Statement: PostgresPreparedStatement, Row>(
        _ statement: Statement, logger: Logger? = nil
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Row> where Row == Statement.Row, Row: Sendable {
        let (index, client) = try await host()
        do {
            return try await answered(index, client) { try await client.execute(statement, logger: logger) }
        } catch {
            throw failed(index, client, error)
        }
    }

    private struct Lease {
        let pool: ObjectIdentifier
        let number: Int
    }

    /// A connection leased through `withConnection`: from which host, and when it is overdue
    /// (nil: never).
    struct Leased {
        let connection: PostgresConnection
        let host: Int
        let deadline: ContinuousClock.Instant?
    }

    /// Notes `connection` as leased from host `index`'s pool `pool`. A pool retired before the
    /// connection could be noted (its host dropped while the lease was being granted) would
    /// never have it closed: it is closed now, and the call fails as the database unavailable.
    private func leased(_ connection: PostgresConnection, from index: Int, _ pool: PostgresClient, limit: Duration?) throws -> Lease? {
        guard single == nil else { return nil }
        let deadline = limit.map { ContinuousClock.now + $0 }
        let lease = state.withLock { state -> Lease? in
            if state.pools[index] !== pool { return nil }
            state.nextLease += 1
            state.leases[ObjectIdentifier(pool), default: [:]][state.nextLease] = Leased(connection: connection, host: index, deadline: deadline)
            return Lease(pool: ObjectIdentifier(pool), number: state.nextLease)
        }
        guard let lease else {
            connection.close().whenComplete { _ in }
            throw StoreError.unavailable("the database host \(names[index]) went away")
        }
        return lease
    }

    private func released(_ lease: Lease?) {
        guard let lease else { return }
        state.withLock { state in
            state.leases[lease.pool]?[lease.number] = nil
            if state.leases[lease.pool]?.isEmpty == true { state.leases[lease.pool] = nil }
        }
    }

    /// Drops each host whose connection has been held past its lease's limit: that connection
    /// and the rest the pool lent out are closed, so what runs on them fails, and what waits
    /// for the host goes to a new pool.
    func dropHostsHeldPastTheirLimit() {
        let now = ContinuousClock.now
        let overdue = state.withLock { state in
            Set(state.leases.values.flatMap(\.values).filter { $0.deadline.map { $0 <= now } ?? false }.map(\.host))
        }
        for index in overdue.sorted() {
            drop(index, because: "a connection was held past its time limit (the server stopped answering?)")
        }
    }

    // MARK: Choosing the host

    /// The host in use and its pool, chosen now if there is none.
    func host() async throws -> (Int, PostgresClient) {
        if let single { return (0, single) }
        if !checksHosts { return (0, state.withLock { $0.pools[0] }) }
        let now = ContinuousClock.now
        let pending = try state.withLock { state throws(StoreError) -> Task<Int, any Error>? in
            if state.chosen != nil { return nil }
            if let failed = state.failed, now < failed.until { throw failed.error }
            if state.search == nil { state.search = Task { try await self.search() } }
            return state.search
        }
        if let pending { _ = try await pending.value }
        guard let chosen = state.withLock({ state in state.chosen.map { ($0, state.pools[$0]) } }) else {
            throw StoreError.unavailable("no host of the database URL takes writes now")
        }
        return chosen
    }

    /// Checks the hosts in order and keeps the first that will do.
    private func search() async throws -> Int {
        var findings: [String] = []
        for index in configurations.indices {
            switch await check(index) {
            case .success(true):
                let cold = state.withLock { state -> Task<Void, Never>? in
                    state.chosen = index
                    state.search = nil
                    state.failed = nil
                    state.health = .answering
                    return warmUp(index, &state)
                }
                cold?.cancel()
                logger.notice("database host chosen", metadata: ["db.host": "\(names[index])", "db.target": "\(sessions.rawValue)"])
                return index
            case .success(false):
                findings.append("\(names[index]) \(sessions == .primary ? "is a standby" : "is read-only")")
            case .failure(let reason):
                findings.append("\(names[index]) \(reason)")
            }
        }
        let error = StoreError.unavailable("no host of the database URL will do (\(sessions.rawValue)): " + findings.joined(separator: "; "))
        state.withLock { state in
            state.search = nil
            state.failed = (error, ContinuousClock.now + retryInterval)
            state.health = .unreachable(error.description)
        }
        logger.warning("no database host will do", metadata: ["db.hosts": "\(findings.joined(separator: "; "))"])
        throw error
    }

    /// The periodic check of the host in use: dropped when it no longer answers or takes writes.
    private func checkChosenHost() async {
        guard let index = state.withLock({ $0.chosen }) else { return }
        switch await check(index) {
        case .success(true): return
        case .success(false): drop(index, because: sessions == .primary ? "it is a standby now" : "it is read-only now")
        case .failure(let reason): drop(index, because: "it \(reason)")
        }
    }

    /// Whether host `index` will do, or why it cannot be asked; on its own connection. The
    /// answer comes within `probeTimeout` whatever the connection does: a host that went
    /// away may leave a query that neither answers nor heeds cancellation, so the check does
    /// not wait for it, and the host's monitor is replaced.
    private func check(_ index: Int) async -> Result<Bool, Reason> {
        let question: PostgresQuery = sessions == .primary
            ? "SELECT NOT pg_is_in_recovery()"
            : "SELECT current_setting('transaction_read_only') = 'off'"
        let monitor = state.withLock { $0.monitors[index] }
        let logger = self.logger
        let answer = await awaitResult(within: probeTimeout) {
            var answer = false
            for try await value in try await monitor.query(question, logger: logger).decode(Bool.self) { answer = value }
            return answer
        }
        switch answer {
        case .success(let value): return .success(value)
        case .failure(let error):
            replaceMonitor(index, monitor)
            if error is TimeoutError { return .failure(Reason("did not answer within \(DurationText.format(probeTimeout))")) }
            return .failure(Reason("is unreachable (\(safeDescription(of: error)))"))
        }
    }

    /// A new monitor for host `index`, if `old` is still it.
    private func replaceMonitor(_ index: Int, _ old: PostgresClient) {
        let retired = state.withLock { state -> Task<Void, Never>? in
            guard !state.stopped, state.monitors[index] === old, state.monitorsRunning[index] != nil else { return nil }
            let fresh = Self.monitor(configurations[index], probeTimeout: probeTimeout, logger: logger)
            state.monitors[index] = fresh
            defer { state.monitorsRunning[index] = Task { await fresh.run() } }
            return state.monitorsRunning[index]
        }
        retired?.cancel()
    }

    private struct Reason: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Drops the host in use when `error`, from its pool `client`, says it went away or no
    /// longer takes writes; returns the error to throw. A call whose pool was retired meanwhile
    /// (its host dropped: the pool fails what waits on it) is told the database is unavailable.
    private func failed(_ index: Int, _ client: PostgresClient, _ error: any Error) -> any Error {
        guard single == nil else {
            return error is ClosedConnectionLent ? StoreError.unavailable("the database connection had closed") : error
        }
        if Self.meansTheHostChanged(error) {
            drop(index, pool: client, because: "a statement failed: \(safeDescription(of: error))")
        }
        let retired = state.withLock { $0.pools[index] !== client }
        return retired && !(error is StoreError) ? StoreError.unavailable("the database host \(names[index]) went away") : error
    }

    /// Stops using host `index` and replaces its pool (if `pool` is still it), so that what
    /// waits for one of its connections fails now.
    func drop(_ index: Int, pool: PostgresClient? = nil, because reason: String) {
        let (retired, stuck) = state.withLock { state -> (Task<Void, Never>?, [PostgresConnection]) in
            let current = state.pools[index]
            var retired: Task<Void, Never>?
            var stuck: [PostgresConnection] = []
            if !state.stopped, pool.map({ $0 === current }) ?? true, state.running[index] != nil {
                retired = state.running[index]
                stuck = (state.leases.removeValue(forKey: ObjectIdentifier(current)) ?? [:]).values.map(\.connection)
                // A statement lost on one of its closed connections would wait for ever; a live
                // one has a moment to end.
                let grace = ContinuousClock.now + Self.retiredPoolGrace
                for (number, statement) in state.unanswered where statement.pool == ObjectIdentifier(current) {
                    state.unanswered[number]?.deadline = min(statement.deadline, grace)
                }
                // Cold until chosen again, unless it is the one host, which stays in use.
                let fresh = Self.pool(configurations[index], warm: !checksHosts, logger: logger)
                state.pools[index] = fresh
                state.warm[index] = !checksHosts
                state.running[index] = Task { await fresh.run() }
            }
            if state.chosen == index, checksHosts { state.chosen = nil }
            if retired != nil { state.health = .unreachable("\(names[index]) was dropped: \(reason)") }
            return (retired, stuck)
        }
        // Said before it is done: a caller whose statement fails as its connection closes
        // finds the reason in the log already.
        if retired != nil {
            logger.warning(checksHosts ? "dropped the database host; choosing again" : "dropped the database host's connections; opening new ones",
                           metadata: ["db.host": "\(names[index])", "reason": "\(reason)"])
        }
        // What is still running on the old pool's connections fails now (the pool's own
        // shutdown waits for its leased connections to come back, which a hung server's never do).
        for connection in stuck { connection.close().whenComplete { _ in } }
        retired?.cancel()
    }

    /// Replaces host `index`'s pool, which nothing uses yet (it was not the host in use), with
    /// a warm one; returns the old pool's task to cancel.
    private func warmUp(_ index: Int, _ state: inout State) -> Task<Void, Never>? {
        guard !state.warm[index], !state.stopped else { return nil }
        let fresh = Self.pool(configurations[index], warm: true, logger: logger)
        state.pools[index] = fresh
        state.warm[index] = true
        guard let cold = state.running[index] else { return nil }  // not started: run() starts the new one
        state.running[index] = Task { await fresh.run() }
        return cold
    }

    /// The pool lent a connection that had already closed.
    struct ClosedConnectionLent: Error, CustomStringConvertible {
        var description: String { "the pool lent a connection that had closed" }
    }

    static func meansTheHostChanged(_ error: any Error) -> Bool {
        if error is ClosedConnectionLent { return true }
        if let transaction = error as? PostgresTransactionError {
            return [transaction.beginError, transaction.closureError, transaction.commitError]
                .contains { $0.map(meansTheHostChanged) ?? false }
        }
        guard let error = error as? PSQLError else { return false }
        return error.isConnectionFailure
    }
}
