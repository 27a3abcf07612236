import EchoRelayCore
import EchoRelayQueue
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Settings of the delivery workers.
public struct DeliveryWorkerConfiguration: Sendable {
    public var lease: Duration = .seconds(60)
    public var timeout: Duration = .seconds(15)
    /// How long a webhook may take to connect (`ECHORELAY_DELIVERY_CONNECT_TIMEOUT`), within `timeout`.
    public var connectTimeout: Duration = .seconds(3)
    public var retry = DeliveryRetryPolicy()
    public var disableAfter: Duration = .seconds(5 * 86_400)
    public var pollInterval: Duration = .seconds(1)
    /// At a graceful stop, how long in-flight items may take to finish before they are
    /// cancelled and handed back for another process.
    public var shutdownGrace: Duration = .seconds(10)
    /// Webhooks in flight at once per process.
    public var concurrency = 64
    /// Webhooks in flight at once per subscription, so one slow backend cannot take every slot.
    /// It also bounds a subscription's rate to this many ÷ its round trip: with 8, the overload
    /// benchmark's loopback subscribers, slowed by a busy machine to about 6 ms, took 1,140–1,390
    /// deliveries a second each on average over six runs while a core sat 20% idle; with 16,
    /// 1,400 and 1,480 in two (BENCHMARKS.md, runs Z and Z2).
    public var perSubscriptionConcurrency = 16
    /// Allows private and loopback subscriber addresses, and plain http.
    public var allowPrivateSubscribers = false
    /// Private hosts and ranges allowed over https all the same.
    public var privateSubscribers = PrivateSubscriberAllowList.none
    /// Certificate authorities trusted for subscribers' TLS besides the system's
    /// (`ECHORELAY_SUBSCRIBER_CA_FILE`: an internal network's CA).
    public var subscriberCAFile: String?
    /// Where subscribers' names are looked up before their addresses are checked
    /// (`AddressResolver`): the process's threads for it, unless a test gives its own.
    public var nameLookups = NameLookups.system
    /// How long a finished delivery's attempt waits for those of its event's other deliveries
    /// that went out with it, to be written in the same commit (`SiblingAttempts`).
    public var siblingLinger: Duration = .milliseconds(20)

    public init() {}
}

/// Sends verified updates to subscribers: claims deliveries under a lease (in per-user order
/// for ordered subscriptions), signs and POSTs them, and records every attempt.
public struct DeliveryWorker: Service, CustomStringConvertible {
    public var description: String { "DeliveryWorker" }

    let store: any DeliveryStore & CompletionStatements
    /// Where attempts are written; each queue's next delivery comes back to `handOffs`.
    let completers: Completers
    let wake: WakeSignal
    let configuration: DeliveryWorkerConfiguration
    let owner: String
    let ready: Gate
    let metrics: RelayMetrics
    let logger: Logger
    /// Parsed signing keys by secret. A rotation makes a new secret, so an entry is never stale.
    let signingKeys = BoundedCache<Secret, WebhookSecret>(capacity: 256)
    let addressChecks: AddressChecks
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
    let stopping = StopFlag()
    /// Deliveries whose webhook has been answered and whose attempt is being recorded: they
    /// keep their lease until the record commits (and a sibling's linger), but no longer a
    /// slot of their subscription's cap, so a claim does not count them.
    let answered = DeliveryIDs()
    /// When the hand-offs waiting in memory were last looked through for stale ones.
    let staleSweep = Pace()

    /// - completers: the process's (`serve` shares one between its workers); nil: its own,
    ///   handing off to `handOffs`.
    public init(store: any DeliveryStore & CompletionStatements, wake: WakeSignal, configuration: DeliveryWorkerConfiguration,
                owner: String, handOffs: DeliveryInbox? = nil, completers: Completers? = nil, ready: Gate = Gate(open: true),
                metrics: RelayMetrics = RelayMetrics(), logger: Logger) {
        let handOffs = handOffs ?? Self.inbox(owner: owner, configuration: configuration)
        self.handOffs = handOffs
        self.completers = completers ?? Completers(statements: store, deliveries: HandOffTarget(inbox: handOffs, wake: wake), metrics: metrics)
        self.addressChecks = AddressChecks(configuration)
        self.metrics = metrics
        self.store = store
        self.wake = wake
        self.configuration = configuration
        self.owner = owner
        self.ready = ready
        self.logger = logger
    }

    public func run() async throws {
        let client = WebhookClient(timeout: configuration.timeout, connectTimeout: configuration.connectTimeout, caFile: configuration.subscriberCAFile,
                                   connectionsPerHost: configuration.concurrency)
        await withGracefulShutdownHandler {
            await ready.wait()
            let loop = WorkLoop(concurrency: configuration.concurrency, pollInterval: configuration.pollInterval,
                            shutdownGrace: configuration.shutdownGrace, wake: wake, logger: logger)
            await withDiscardingTaskGroup { group in
                group.addTask { await sweepParked(until: stopping) }
                await loop.run(until: stopping) { free in
                    try await nextDeliveries(upTo: free)
                } process: { outgoing in
                    await deliver(outgoing, client: client)
                }
            }
        } onGracefulShutdown: {
            stopping.set()
            wake.wake()
            ready.open()
        }
        await claimRunner.finish()
        await releaseWaitingHandOffs()
        await client.shutdown()
    }

    /// At a stop, gives back the hand-offs that never went out, so that another process
    /// sends them at once rather than when their leases lapse: under a backlog, thousands.
    func releaseWaitingHandOffs() async {
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

    /// The inbox a worker with this owner and configuration hands off to. It has no limit on
    /// how many wait: what waits too long is forgotten instead (`sendableFor`). With a limit
    /// (four a webhook slot), a backlog filled it, and the deliveries written meanwhile were
    /// left to claims, which find a slot only between hand-offs: under the overload benchmark
    /// 13% of events waited 8 s or more after their verification (13 s on average), while
    /// most took milliseconds. (One a slot was worse still: 2,363 deliveries in a step waited
    /// for claims instead of 43.)
    public static func inbox(owner: String, configuration: DeliveryWorkerConfiguration) -> DeliveryInbox {
        DeliveryInbox(handOff: HandOff(owner: owner, lease: configuration.lease), capacity: nil)
    }

    /// How long after its hand-off a delivery may still be sent from memory: half of what its
    /// lease leaves beyond a webhook's time limit, so that it is answered and recorded well
    /// before the lease ends (22.5 s with the defaults). One sent later could be claimed by
    /// another process, or this one's claim, while its webhook is still out. What waited
    /// longer is forgotten; once its lease lapses, a claim takes it.
    var sendableFor: Duration { (configuration.lease - configuration.timeout) / 2 }

    /// What to send next: first what claims leased ahead, for the slots that have freed
    /// (`claimedAhead`), while the next claim starts beside the loop if one is due
    /// (`startClaim`); then the deliveries handed off to this process — those of a
    /// subscription at its cap wait for one of its deliveries to end (`waitingForSlot`), and
    /// the others go past them. Deliveries of one event go out as a group whose attempts are
    /// written together.
    func nextDeliveries(upTo free: Int) async throws -> [Outgoing] {
        let cap = configuration.perSubscriptionConcurrency
        forgetStaleHandOffs()
        let (ahead, aheadToCheck) = takeLoaded(from: claimedAhead, upTo: free, cap: cap)
        startClaim(free: free - ahead.count - aheadToCheck.count)
        let room = free - ahead.count - aheadToCheck.count
        let (admittedWaiting, waitingToCheck) = takeLoaded(from: waitingForSlot, upTo: room, cap: cap)
        let slotted = aheadToCheck + waitingToCheck
        // `room` already leaves out what was taken from `claimedAhead`.
        let taken = slotted.map { HandedOff($0.item.deliveryID, at: $0.at) }
            + handOffs.take(upTo: room - admittedWaiting.count - waitingToCheck.count)
        let handedOffAt = Dictionary(taken.map { ($0.item, $0.at) }, uniquingKeysWith: min)
        // Loaded again, not kept from before: only leases still this process's come back.
        let loaded = taken.isEmpty ? [] : try await store.leasedDeliveries(ids: taken.map(\.item), owner: owner)
        // Those that waited for a slot first: the room was counted for them.
        let waited = Set(slotted.map(\.item.deliveryID))
        let (handed, overCap) = inFlight.admit(loaded.filter { waited.contains($0.deliveryID) }
                                                 + loaded.filter { !waited.contains($0.deliveryID) }, cap: cap)
        waitingForSlot.add(overCap) { handedOffAt[$0] ?? .now }
        return Outgoing.grouped(ahead + admittedWaiting + handed, linger: configuration.siblingLinger) { records in
            await writeAttempts(records)
        }
    }

    /// Starts a claim beside the loop when one is due and none is running: when a wake asked
    /// for one (work made due that nobody was handed, another process's notice), or the last
    /// claim found something, or a poll interval has passed. A claim, when one is due, goes
    /// before the inbox: what only a claim finds (a queue's head that an outcome or the sweeper
    /// unparked, retries come due, other processes' work) is older than what waits there, so
    /// what it leases waits in `claimedAhead`, which the loop serves first. Hand-offs waiting
    /// in memory hold a lease but no slot, so the claim's cap does not count them, as it does
    /// not count answered webhooks: else under a backlog the claim found every slot taken by
    /// them, and what only it finds waited until the flow of hand-offs stopped (run S's
    /// overload: 15.7 s after verification at the median for those, milliseconds for the rest).
    func startClaim(free: Int) {
        guard !claimRunner.isRunning else { return }
        // While hand-offs wait in memory, slots are seldom short of work, and under the overload
        // benchmark most claims found nothing (0.3 deliveries a claim, 30 claims a second,
        // 4% of the database's time): claims are spaced then.
        let spacing = handOffs.isEmpty && waitingForSlot.isEmpty ? .zero : Self.claimSpacingBehindHandOffs
        let limit = claimLimit(free: free)
        guard claims.due(room: limit, every: configuration.pollInterval, asked: wake.takeClaimRequest(),
                         spacing: spacing) else { return }
        // Read now, before this turn takes hand-offs from the inbox: one taken and not yet
        // admitted or waiting for a slot would be in neither list, and count as a slot taken.
        let holdingNoSlot = answered.all + handOffs.items + waitingForSlot.ids
        claimRunner.start { [self] in
            do {
                let claimed = try await unlessStopped(stopping) { [self] in
                    try await store.claimDeliveries(owner: owner, limit: limit, lease: configuration.lease, perSubscriptionCap: claimCap,
                                                    answered: holdingNoSlot)
                }
                claims.ended(found: claimed.count, room: limit)
                claimFailures.reset()
                claimedAhead.add(claimed) { _ in .now }
                // The loop looks again: at what was claimed, or at an ask that came meanwhile.
                if !claimed.isEmpty || wake.hasClaimRequest { wake.wake(claim: false) }
            } catch is CancellationError where stopping.isSet {
                return
            } catch {
                claims.failed()
                logger.error("claiming deliveries failed", metadata: ["error": "\(error)"])
                // Then the loop looks again, and claims (the failure counts as an ask).
                try? await Task.sleep(for: backOff(after: claimFailures.next(), upTo: configuration.pollInterval))
                wake.wake(claim: false)
            }
        }
    }

    /// The least time between claims while hand-offs wait in memory: what only a claim finds
    /// then waits until the loop looks after it (the next answered webhook, or the poll),
    /// behind hand-offs that have waited longer.
    static let claimSpacingBehindHandOffs: Duration = .milliseconds(100)

    /// The cap a claim keeps per subscription in the database: the webhooks in flight, and
    /// three times as many leased ahead, waiting in `claimedAhead` for a slot. With no more
    /// than the cap, a slot that freed waited for a claim's round trip, about twice a webhook
    /// to a fast subscriber, and a worker fed by claims finished 0.6× what pgbench did running
    /// the same claim and finish (`scripts/bench`'s claim part). Claims follow one another,
    /// each about 3 ms from start to rows under that benchmark, while a subscription's 8 slots
    /// (the default then) sent a webhook each 1.1 ms: about 20 a claim. Twice the cap gave
    /// 0.8×, three times 0.78–0.95×, four times 0.85–0.86× (BENCHMARKS.md, runs W to Y).
    public static let claimCapPerSlot = 4
    var claimCap: Int { Self.claimCapPerSlot * configuration.perSubscriptionConcurrency }

    /// How many deliveries a claim may lease: the loop's free slots and what `claimedAhead`
    /// has room for, the same multiple of the worker's slots as `claimCap` is of a
    /// subscription's. With only the free slots, a claim leased about 25 where the caps allowed
    /// up to 128, however many were due; claims follow one another, so that bounded the rate:
    /// the claim benchmark's worker finished 0.59–0.60× what pgbench did, and 0.75–0.85× with
    /// this in five runs (BENCHMARKS.md, run AA).
    func claimLimit(free: Int) -> Int {
        let ahead = (Self.claimCapPerSlot - 1) * configuration.concurrency
        return max(0, free) + max(0, ahead - claimedAhead.count)
    }

    /// Takes from `queue` (`claimedAhead` or `waitingForSlot`, both loaded already) what the
    /// slots free now allow: those that waited no more than `loadedFresh`, counted in flight,
    /// to send as they are; the others to load again first and admit, as a hand-off is (their
    /// lease may have been taken back: a subscription deleted, a delivery cancelled).
    func takeLoaded(from queue: SlotQueue, upTo free: Int, cap: Int)
        -> (fresh: [DeliveryTask], toCheck: [HandedOff<DeliveryTask>]) {
        let taken = queue.take(upTo: free) { inFlight.room(for: $0, cap: cap) }
        guard !taken.isEmpty else { return ([], []) }
        let freshSince = ContinuousClock.now - Self.loadedFresh
        let fresh = taken.filter { $0.at >= freshSince }.map(\.item)
        inFlight.started(fresh)
        return (fresh, taken.filter { $0.at < freshSince })
    }

    /// How long a delivery waiting in memory goes without being loaded again, counted from
    /// its claim or hand-off (its load came after). Loading again each one that waited for a
    /// slot, however briefly, loaded 1.35 deliveries for each sent in scripts/bench's step at
    /// 1,418 events/s; past this, it waited behind a slow subscriber, or a backlog.
    static let loadedFresh: Duration = .seconds(1)

    /// Forgets the hand-offs that waited past `sendableFor`, in the inbox or for a slot. Once a
    /// poll interval, not at every call: it reads every waiting hand-off, thousands under a
    /// backlog, and `sendableFor` leaves its margin.
    func forgetStaleHandOffs() {
        guard staleSweep.due(every: configuration.pollInterval) else { return }
        let before = ContinuousClock.now - sendableFor
        let dropped = handOffs.drop(handedOffBefore: before) + waitingForSlot.drop(handedOffBefore: before)
            + claimedAhead.drop(handedOffBefore: before)
        if dropped > 0 {
            logger.notice("handed-off deliveries waited too long to be sent before their lease ends; a claim takes them once it has",
                          metadata: ["deliveries": "\(dropped)", "waited.over": "\(DurationText.format(sendableFor))"])
        }
    }

    /// Writes attempts in one transaction, leasing each queue's next delivery to this process.
    func writeAttempts(_ records: [AttemptRecord]) async -> [Result<FinishedWork, any Error>] {
        await completers.record(records, owner: owner, disableAfter: configuration.disableAfter, perSubscriptionCap: claimCap)
    }

    /// The safety net of parking (`DeliveryStore.unparkStrandedDeliveries`): every poll
    /// interval it looks at what was parked lately, which is where a park that raced with its
    /// blocker's end is found; every `fullSweepEvery` at all that is parked.
    func sweepParked(until stopping: StopFlag) async {
        let fullSweepEvery = 60
        var round = 0
        while !stopping.isSet, !Task.isCancelled {
            try? await Task.sleep(for: configuration.pollInterval)
            guard !stopping.isSet, !Task.isCancelled else { return }
            round += 1
            let since = round % fullSweepEvery == 0 ? nil : Date(timeIntervalSinceNow: -Self.parkRaceWindow)
            do {
                let unparked = try await unlessStopped(stopping) { [store] in
                    try await store.unparkStrandedDeliveries(parkedSince: since)
                }
                if unparked > 0 {
                    logger.notice("unparked deliveries whose queue could go on", metadata: ["deliveries": "\(unparked)"])
                    wake.wake()
                }
            } catch is CancellationError where stopping.isSet {
                return
            } catch {
                logger.warning("looking for stranded parked deliveries failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// How far back the frequent sweep looks: a park raced with its blocker only if the
    /// statement that parked it was still running when the blocker ended, so this must be
    /// longer than such a statement takes plus a poll interval; what a slower one strands,
    /// the full sweep finds within a minute. Not longer: under a backlog of 10,000, a 30 s
    /// window re-checked about 5,000 parked deliveries a second (30–120 ms a sweep).
    static let parkRaceWindow: TimeInterval = 5

    /// Sends one delivery and records the attempt (with its siblings'), and says what it left
    /// for the loop to send next.
    func deliver(_ outgoing: Outgoing, client: WebhookClient) async -> WorkLeft {
        let task = outgoing.task

        let startedAt = Date()
        let clock = ContinuousClock()
        let start = clock.now
        let answer: WebhookClient.Answer
        switch await addressChecks.decision(for: task.url, allowPrivate: configuration.allowPrivateSubscribers) {
        case .refused(let refusal):
            answer = refusal
        case .send(to: let address):
            let body = outgoing.body
            answer = await client.post(url: task.url, connectingTo: address, headers: headers(for: task, body: body), body: body)
        }
        inFlight.finished(task.subscriptionID)
        answered.insert(task.deliveryID)
        defer { answered.remove(task.deliveryID) }
        // The slot is free now, in this process's count and in the claim's (an answered lease
        // holds none): the loop fills it, from what was claimed ahead or handed off, while the
        // attempt is recorded rather than after (a group commit's flush or two). Without asking
        // for a claim: the loop claims only if the last one found something (`ClaimPacing`).
        wake.wake(claim: false)
        if Task.isCancelled {
            outgoing.siblings?.abandon()
            await Task { try? await store.releaseDeliveries(ids: [task.deliveryID], owner: owner) }.value
            return .nothing
        }

        let result: DeliveryAttemptResult
        switch answer.statusCode {
        case let code? where (200..<300).contains(code): result = .success
        case 410?: result = .gone
        case let code? where code == 429 || code == 503:
            result = .failed(retryAfter: answer.retryAfter.flatMap { DeliveryRetryPolicy.retryAfter($0) })
        default: result = .failed(retryAfter: nil)
        }
        var random = SystemRandomNumberGenerator()
        let next = configuration.retry.next(after: result, attempts: task.attempts, random: &random)
        let attempt = DeliveryAttempt(
            startedAt: startedAt, duration: clock.now - start, statusCode: answer.statusCode, errorKind: answer.errorKind,
            error: answer.error, responseHead: answer.responseHead
        )
        let record = AttemptRecord(task: task, attempt: attempt, next: next)
        let recorded = if let siblings = outgoing.siblings { await siblings.record(record) } else { await writeAttempts([record])[0] }
        let written: FinishedWork
        do {
            written = try recorded.get()
            guard written.kept else {
                logger.warning("lease lost before the attempt was recorded; another worker has the delivery",
                               metadata: Self.metadata(task))
                return .nothing
            }
        } catch {
            logger.error("recording the delivery attempt failed", metadata: Self.metadata(task, ["error": "\(error)"]))
            return .nothing
        }
        metrics.deliveryAttempted(outcome: next.outcome, duration: attempt.duration, errorKind: attempt.errorKind)
        let outcome = switch next {
        case .delivered: "deliveries.delivered"
        case .retry: "deliveries.retried"
        case .dead: "deliveries.dead"
        }
        summary.count(outcome, logger: logger)
        switch next {
        case .delivered:
            logger.debug("delivered", metadata: Self.metadata(task, ["http.status": "\(answer.statusCode ?? 0)"]))
        case .retry(let delay):
            logger.notice("delivery failed, will retry", metadata: Self.metadata(task, [
                "http.status": "\(answer.statusCode.map(String.init) ?? "none")", "error.kind": "\(answer.errorKind?.rawValue ?? "none")",
                "error": "\(answer.error ?? "")",
                "retry.in": "\(DurationText.format(delay))",
            ]))
        case .dead(let disabled):
            logger.warning("delivery dead-lettered", metadata: Self.metadata(task, [
                "http.status": "\(answer.statusCode.map(String.init) ?? "none")", "error.kind": "\(answer.errorKind?.rawValue ?? "none")",
                "error": "\(answer.error ?? "")",
                "subscription.disabled": "\(disabled ?? "no")",
            ]))
        }
        // The loop looks again when there is something to take: due deliveries only a claim
        // finds, or deliveries in the inbox (this record's successors, or ones that waited for
        // their subscription's slot). The record says whether it made deliveries due without
        // leasing them, or found its subscription's due deliveries left to nobody (a claim
        // stopped at the cap leaves them, and this attempt freed a slot): only then is a claim
        // worth its cost. Tried before: claiming after every final delivery (a claim an event
        // at 100 events/s, finding nothing), and only when a subscription had been at its cap
        // since the last claim (a 13,500-event backlog took 27 s to drain instead of 7.6: the
        // process's count of a subscription's webhooks lags the database's).
        if written.madeWorkDue { return .forClaim }
        return handOffs.isEmpty && waitingForSlot.isEmpty && claimedAhead.isEmpty ? .nothing : .inInbox
    }

    /// What a log line about `task` carries. Built only for a line that is written: setting
    /// a logger's metadata key by key formatted it anew each time (3% of serve's CPU in perf).
    static func metadata(_ task: DeliveryTask, _ more: Logger.Metadata = [:]) -> Logger.Metadata {
        more.merging([
            "event.id": "\(task.eventID)", "user.id": "\(task.userID)",
            "subscription.id": "\(task.subscriptionID)", "delivery.attempt": "\(task.attempts)",
        ]) { mine, _ in mine }
    }

    /// Standard Webhooks headers, signed with every active secret of the task's subscription.
    func headers(for task: DeliveryTask, body: [UInt8]) -> [(String, String)] {
        let secrets = task.secrets.compactMap { secret in
            try? signingKeys.value(for: secret) { () throws(WebhookSecretError) in try WebhookSecret(secret.revealed) }
        }
        return WebhookClient.signedHeaders(webhookID: task.webhookID, body: body, secrets: secrets)
    }
}

/// A set of delivery ids shared between tasks.
final class DeliveryIDs: Sendable {
    private let ids = Mutex<Set<Int64>>([])

    var all: [Int64] { ids.withLock { Array($0) } }
    func insert(_ id: Int64) { _ = ids.withLock { $0.insert(id) } }
    func remove(_ id: Int64) { _ = ids.withLock { $0.remove(id) } }
}
