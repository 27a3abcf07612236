import EchoRelayCore
import Logging
import ServiceLifecycle

/// The delivery kind of work: what to send next, from claims (under a lease, in per-user
/// order for ordered subscriptions) and hand-offs, within each subscription's slots; and,
/// once the worker has sent one, its attempt written through the completers with its
/// siblings'. The worker only signs, posts and classifies (`send`).
public final class DeliveryQueue: WorkKind {

    let store: any DeliveryStore
    let wake: WakeSignal
    let configuration: DeliveryQueueConfiguration
    let owner: String
    let completers: Completers
    let metrics: RelayMetrics
    let logger: Logger
    let summary = OutcomeSummary("webhooks sent", keys: ["deliveries.delivered", "deliveries.retried", "deliveries.dead"])
    /// Deliveries leased to this process as they were written, to send without a claim.
    let handOffs: DeliveryInbox
    /// A claim that found anything claims again first at the next call: its room is the
    /// slots its subscriptions' caps leave, so it seldom fills the worker's, and what only a
    /// claim finds would otherwise wait for the next ask or poll while hand-offs take every
    /// slot that frees (under the overload benchmark, until the offering ended).
    let claims = ClaimPacing(againAfterAnyFind: true)
    /// Webhooks in flight per subscription in this process: the cap for handed-off deliveries
    /// (a claim counts the leases in the database).
    let inFlight = SubscriptionLoad()
    /// Handed-off deliveries of subscriptions at their cap, waiting for one of their webhooks
    /// to end. Kept apart from the inbox so that they do not stand in front of every other
    /// subscription's: one slow subscriber held them all up while its own went back to the
    /// inbox's front.
    let waitingForSlot = SlotQueue()
    /// What claims leased, waiting for their subscriptions' slots: with a claim's cap above
    /// the subscription's (`claimCap`), a slot that frees takes one at once.
    let claimedAhead = SlotQueue()
    let claimRunner = ClaimRunner()
    let claimFailures = SharedCount()
    /// Set at a graceful stop: the loop ends, and a claim running is cancelled.
    public let stopping = StopFlag()
    /// Deliveries whose webhook has been answered and whose attempt is being recorded: they
    /// keep their lease until the record commits (and a sibling's linger), but no longer a
    /// slot of their subscription's cap, so a claim does not count them.
    let answered = DeliveryIDs()
    /// When the hand-offs waiting in memory were last looked through for stale ones.
    let staleSweep = Pace()

    public init(store: any DeliveryStore, wake: WakeSignal, configuration: DeliveryQueueConfiguration, owner: String,
                handOffs: DeliveryInbox, completers: Completers, metrics: RelayMetrics, logger: Logger) {
        self.store = store
        self.wake = wake
        self.configuration = configuration
        self.owner = owner
        self.handOffs = handOffs
        self.completers = completers
        self.metrics = metrics
        self.logger = logger
    }

    /// The inbox a worker with this owner and lease hands off to. It has no limit on how many
    /// wait: what waits too long is forgotten instead (`sendableFor`). With a limit (four a
    /// webhook slot), a backlog filled it, and the deliveries written meanwhile were left to
    /// claims, which find a slot only between hand-offs: under the overload benchmark 13% of
    /// events waited 8 s or more after their verification (13 s on average), while most took
    /// milliseconds.
    public static func inbox(owner: String, lease: Duration) -> DeliveryInbox {
        DeliveryInbox(handOff: HandOff(owner: owner, lease: lease), capacity: nil)
    }

    public var loop: WorkLoop {
        WorkLoop(configuration, wake: wake, logger: logger)
    }

    public func next(upTo free: Int) async throws -> [Outgoing] {
        try await nextDeliveries(upTo: free)
    }

    public func alongside() async {
        await sweepParked()
    }

    /// At a stop, once the claim running has ended, gives back the hand-offs that never went
    /// out, so that another process sends them at once rather than when their leases lapse:
    /// under a backlog, thousands.
    public func stopped() async {
        await claimRunner.finish()
        let waiting = handOffs.take(upTo: .max).map(\.item)
            + (waitingForSlot.take(upTo: .max) { _ in .max } + claimedAhead.take(upTo: .max) { _ in .max }).map(\.item.deliveryID)
        guard !waiting.isEmpty else { return }
        // Bounded: a database that is away must not hold the stop (the leases lapse instead).
        switch await awaitResult(within: .seconds(5), { [store, owner] in try await store.releaseDeliveries(ids: waiting, owner: owner) }) {
        case .success:
            logger.info("gave back the handed-off deliveries that had not gone out", metadata: ["deliveries": "\(waiting.count)"])
        case .failure(let error):
            logger.warning("giving back the handed-off deliveries failed; their leases lapse instead",
                           metadata: ["deliveries": "\(waiting.count)", "error": "\(error)"])
        }
    }

    /// Writes attempts through the completer, leasing each queue's next delivery to this process.
    func writeAttempts(_ records: [AttemptRecord]) async -> [Result<FinishedWork, any Error>] {
        await completers.record(records, owner: owner, disableAfter: configuration.disableAfter, perSubscriptionCap: claimCap)
    }
}
