import EchoRelayCore
import EchoRelayQueue
import NIOCore
import PostgresNIO
import Synchronization

/// What the client knows of the host in use, without asking it anything.
public enum HostHealth: Sendable, Equatable {
    /// Not known yet: no connection to it has been held since the client started (or the
    /// client is one run by its caller, which nothing watches).
    case unknown
    /// A connection to it is open.
    case answering
    /// Why it is not: its connection closed, it could not be reached, or it was dropped.
    case unreachable(String)
}

extension DatabaseClient {
    public var health: HostHealth { state.withLock { $0.health } }

    /// Holds one connection of the host in use for as long as it stays open, so that `health`
    /// is current without a statement (`/readyz` reads it): a server that stops or crashes
    /// closes it, which says so at once. A host dropped for any reason closes it too (it is
    /// leased like any other), and it is leased again from the new pool. While no connection
    /// can be had, it is tried again every `retryInterval`, each try bounded by `probeTimeout`.
    func watchHostInUse() async {
        var failedLast = false
        while !Task.isCancelled {
            if failedLast { try? await Task.sleep(for: retryInterval) }
            guard !Task.isCancelled else { return }
            let news = state.withLock { $0.healthChanges }
            let outcome = await holdAConnection()
            if Task.isCancelled { return }
            failedLast = outcome.failed
            markUnreachable(outcome, unlessNewerThan: news)
        }
    }

    /// Leases a connection (waiting at most `probeTimeout` for it) and waits until it closes.
    private func holdAConnection() async -> (reason: String, failed: Bool, pool: ObjectIdentifier?) {
        let leased = Held()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await self.withConnection { connection, index, pool in
                        leased.set(self.names[index], ObjectIdentifier(pool))
                        self.markAnswering(ifStill: ObjectIdentifier(pool))
                        await Self.untilClosed(connection)
                    }
                }
                group.addTask {
                    try await Task.sleep(for: self.probeTimeout)
                    if leased.value == nil { throw TimeoutError(duration: self.probeTimeout) }
                }
                while try await group.next() != nil {}
            }
        } catch let error as TimeoutError {
            return ("no connection within \(DurationText.format(error.duration))", true, nil)
        } catch {
            return (safeDescription(of: error), true, nil)
        }
        guard let (host, pool) = leased.value else { return ("the watch stopped", false, nil) }
        return ("the connection to \(host) closed", false, pool)
    }

    /// The host and pool of the connection held, once leased.
    private final class Held: Sendable {
        private let held = Mutex<(host: String, pool: ObjectIdentifier)?>(nil)
        var value: (host: String, pool: ObjectIdentifier)? { held.withLock { $0 } }
        func set(_ host: String, _ pool: ObjectIdentifier) { held.withLock { $0 = (host, pool) } }
    }

    /// Returns when `connection` closes, or closes it when the task is cancelled.
    private static func untilClosed(_ connection: PostgresConnection) async {
        await withTaskCancellationHandler {
            _ = try? await connection.closeFuture.get()
        } onCancel: {
            connection.close().whenComplete { _ in }
        }
    }

    private func markAnswering(ifStill pool: ObjectIdentifier) {
        state.withLock { state in
            guard state.pools.contains(where: { ObjectIdentifier($0) == pool }) else { return }
            state.health = .answering
        }
    }

    /// Records why the connection was lost, unless that is no longer news: the pool it came
    /// from was retired (`drop` said why), or, for a connection never had, someone else (a
    /// search that chose a host while this try waited) said more since the try began.
    private func markUnreachable(_ outcome: (reason: String, failed: Bool, pool: ObjectIdentifier?), unlessNewerThan news: Int) {
        let wasAnswering = state.withLock { state -> Bool in
            if let pool = outcome.pool, !state.pools.contains(where: { ObjectIdentifier($0) == pool }) { return false }
            if outcome.failed, state.healthChanges != news { return false }
            defer { state.health = .unreachable(outcome.reason) }
            return state.health == .answering
        }
        // Once per outage: `/readyz` says only "database unreachable", to anyone.
        if wasAnswering { logger.warning("the database host in use is unreachable", metadata: ["reason": "\(outcome.reason)"]) }
    }
}
