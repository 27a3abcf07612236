import EchoRelayCore
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The queue's batched completers, River's `BatchCompleter`: ingests, verification outcomes
/// and delivery attempts that arrive at about the same time share one write each (group
/// commit, `GroupCommit`), through the store's statements (`CompletionStatements`). What a
/// write leased to this process goes to its worker's inbox with a wake, the same way for
/// every kind and on both stores: an ingest's verifications, an outcome's deliveries, an
/// attempt's next delivery of its queue. A service of its own, started before the workers and
/// stopped after them, so the last attempts of a graceful stop are written.
public final class Completers: Service, CustomStringConvertible, Sendable {
    public var description: String { "Completers" }

    private let ingests: GroupCommit<IncomingEvent, IngestReceipt>
    private let outcomes: GroupCommit<VerificationFinish, FinishedWork>
    /// Each caller brings a group of attempts (those of one event's deliveries that went out
    /// together), which is never split between writes.
    private let attempts: GroupCommit<[RecordedAttempt], [Result<FinishedWork, any Error>]>
    private let deliveryHandOff: HandOff?

    /// - verifications: where an ingest's hand-offs go (nil: none are asked for).
    /// - deliveries: where an outcome's and an attempt's hand-offs go (nil: none are asked for).
    /// - ingestWait: how long an ingest waits for its commit before `TimeoutError` (a 503:
    ///   nothing stored, the provider retries); a write still running at twice that fails.
    /// - maximumBatch: the most items one write takes: 64 keep a statement small.
    public init(
        statements: any CompletionStatements, verifications: HandOffTarget<VerificationTask>? = nil,
        deliveries: HandOffTarget<Int64>? = nil, ingestWait: Duration = .seconds(10), maximumBatch: Int = 64,
        metrics: RelayMetrics = RelayMetrics()
    ) {
        // The event loop that reads the database's answers runs the flushes: a thread switch
        // saved on each way of every one.
        let executor = EventLoopTaskExecutor(MultiThreadedEventLoopGroup.singleton.next())
        let ingestLimit = ingestWait * 2
        ingests = GroupCommit(maximumBatch: maximumBatch, maximumWait: ingestWait, flushLimit: ingestLimit,
                              flushed: { metrics.batchCommitted(.ingest, size: $0) }, executor: executor) { take in
            let written = try await statements.writeIngests(within: ingestLimit, handOff: { verifications?.inbox.request(count: $0) },
                                                            take: take)
            verifications?.handOff(written.compactMap { try? $0.get().handedOff }, claim: false)
            return written.map { $0.map(\.receipt) }
        }
        outcomes = GroupCommit(maximumBatch: maximumBatch, flushLimit: Self.workLimit,
                               flushed: { metrics.batchCommitted(.verification, size: $0) }, executor: executor) { take in
            let written = try await statements.writeVerificationFinishes(within: Self.workLimit, take: take)
            deliveries?.handOff(written, first: false, wakes: true)
            return written
        }
        attempts = GroupCommit(maximumBatch: maximumBatch, flushLimit: Self.workLimit, executor: executor) { take in
            let sizes = GroupSizes()
            let written = try await statements.writeAttempts(within: Self.workLimit) {
                let groups = take()
                sizes.set(groups.map(\.count))
                return groups.flatMap { $0 }
            }
            metrics.batchCommitted(.attempt, size: written.count)
            // Older than what waits in the inbox: the next of a queue whose head just ended.
            // No wake: each attempt's own task tells its loop what it left (`WorkLeft`).
            deliveries?.handOff(written, first: true, wakes: false)
            var rest = written[...]
            return sizes.value.map { size in
                defer { rest = rest.dropFirst(size) }
                return .success(Array(rest.prefix(size)))
            }
        }
        deliveryHandOff = deliveries?.inbox.request()
    }

    /// How long a write of finished work may take: the default work lease, after which the
    /// work is another worker's anyway.
    static let workLimit: Duration = .seconds(60)

    /// Stores the event and its verification work item, and answers only after the commit
    /// that holds them.
    public func ingest(_ event: IncomingEvent) async throws -> IngestReceipt {
        try await ingests.submit(event)
    }

    /// Records a final outcome (`EventStore.finishVerification`), handing its deliveries to
    /// this process's delivery worker when there is one.
    public func finish(_ task: VerificationTask, owner: String, outcome: VerificationOutcome) async throws -> FinishedWork {
        try await outcomes.submit(VerificationFinish(task: task, owner: owner, outcome: outcome, handOff: deliveryHandOff))
    }

    /// Records attempts in one write (`DeliveryStore.recordDeliveryAttempts`), handing each
    /// queue's next delivery to this process's delivery worker.
    public func record(
        _ records: [AttemptRecord], owner: String, disableAfter: Duration, perSubscriptionCap: Int
    ) async -> [Result<FinishedWork, any Error>] {
        guard !records.isEmpty else { return [] }
        let group = records.map {
            RecordedAttempt($0, owner: owner, disableAfter: disableAfter, handOff: deliveryHandOff, cap: perSubscriptionCap)
        }
        do {
            return try await attempts.submit(group)
        } catch {
            return records.map { _ in .failure(error) }
        }
    }

    /// Runs until the graceful stop, which comes after the workers' (they are listed after
    /// it): what they submitted by then has been answered.
    public func run() async throws {
        try? await gracefulShutdown()
    }
}

/// The sizes of the attempt groups a write took, told from its `take`.
private final class GroupSizes: Sendable {
    private let sizes = Mutex<[Int]>([])
    var value: [Int] { sizes.withLock { $0 } }
    func set(_ value: [Int]) { sizes.withLock { $0 = value } }
}

/// A worker's inbox and its wake: where a write puts what it leased to this process.
public struct HandOffTarget<Item: Sendable>: Sendable {
    public let inbox: HandOffInbox<Item>
    public let wake: WakeSignal

    public init(inbox: HandOffInbox<Item>, wake: WakeSignal) {
        self.inbox = inbox
        self.wake = wake
    }

    /// Puts `items` in the inbox and wakes the worker for them, without a claim.
    func handOff(_ items: [Item], claim: Bool, first: Bool = false) {
        guard !items.isEmpty else { return }
        inbox.add(items, first: first)
        wake.wake(claim: claim)
    }
}

extension HandOffTarget<Int64> {
    /// The deliveries `written` leased to this process, into the inbox; with `wakes`, the
    /// worker is woken for them, and to claim when a write left deliveries due that only a
    /// claim finds.
    func handOff(_ written: [Result<FinishedWork, any Error>], first: Bool, wakes: Bool) {
        var handed: [Int64] = []
        var madeWorkDue = false
        for case .success(let work) in written where work.kept {
            handed += work.handedOff
            madeWorkDue = madeWorkDue || work.madeWorkDue
        }
        if !handed.isEmpty { inbox.add(handed, first: first) }
        if wakes, madeWorkDue || !handed.isEmpty { wake.wake(claim: madeWorkDue) }
    }
}
