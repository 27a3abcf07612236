import EchoRelayCore
import EchoRelayQueue
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Wakes workers in other processes. After a commit that created work, `announce()` asks for
/// one `NOTIFY`; bursts are coalesced so at most one is sent per `debounce`. (Ingest sends
/// its own, inside its statement: see `WakeLimiter`.) A dedicated connection
/// LISTENs and wakes this process's workers when another process announces work. Where
/// notifications are lost (a transaction-pooling proxy), the workers' polling still finds
/// the work.
public final class PostgresWorkNotifications: Service, Sendable, CustomStringConvertible {
    public var description: String { "PostgresWorkNotifications" }

    static let channel = "echorelay_work"

    private let client: DatabaseClient
    private let localWakes: [WakeSignal]
    private let outbound = WakeSignal()
    private let processID: String
    private let debounce: Duration
    private let logger: Logger

    public init(client: DatabaseClient, localWakes: [WakeSignal], processID: String,
                debounce: Duration = .milliseconds(10), logger: Logger) {
        self.client = client
        self.localWakes = localWakes
        self.processID = processID
        self.debounce = debounce
        self.logger = logger
    }

    /// Called after a commit that created work.
    public func announce() {
        outbound.wake()
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.sendLoop() }
                group.addTask { await self.listenLoop() }
            }
        }
    }

    private func sendLoop() async {
        while !Task.isCancelled {
            await outbound.wait(upTo: .seconds(3600))
            guard !Task.isCancelled else { return }
            do {
                try await client.query("SELECT pg_notify(\(Self.channel), \(processID))", logger: logger)
            } catch {
                logger.debug("NOTIFY failed; other processes will find the work by polling", metadata: ["error": "\(safeDescription(of: error))"])
            }
            try? await Task.sleep(for: debounce)
        }
    }

    private func listenLoop() async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        for try await notification in notifications where notification.payload != processID {
                            for wake in localWakes { wake.wake() }
                        }
                    }
                }
            } catch {
                guard !Task.isCancelled else { return }
                logger.debug("LISTEN interrupted; retrying", metadata: ["error": "\(safeDescription(of: error))"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}

/// Lets at most one wake-up through per `interval`, River-style: the `NOTIFY` an ingest
/// statement carries is leading-edge limited, so a burst costs one notification, not one per
/// batch. A listener that misses work this way (it claimed just before the batch committed)
/// finds it by polling.
public final class WakeLimiter: Sendable {
    /// What the notification carries: the sending process's id, which its own listener ignores.
    let payload: String
    let interval: Duration
    private let lastSent = Mutex<ContinuousClock.Instant?>(nil)

    public init(payload: String, interval: Duration = .milliseconds(10)) {
        self.payload = payload
        self.interval = interval
    }

    /// The payload to send now, or nil when one was sent less than `interval` ago.
    func next() -> String? {
        let now = ContinuousClock.now
        return lastSent.withLock { lastSent in
            if let last = lastSent, now - last < interval { return nil }
            lastSent = now
            return payload
        }
    }
}
