import EchoRelayCore
import Logging
import ServiceLifecycle

/// The verification kind of work: what to verify next — the events this process's ingest
/// handed over, then a claim for the rest when one is due — and, once the worker has decided
/// one, its outcome written through the completers, or its next try scheduled. The worker only
/// asks the provider and classifies (`Work`).
public final class VerificationQueue: WorkKind {
    let store: any EventStore
    let wake: WakeSignal
    let configuration: VerificationQueueConfiguration
    let owner: String
    let completers: Completers
    /// Events this process's ingest handed to it, leased already (nil: none).
    let handOffs: VerificationInbox?
    let claims = ClaimPacing()
    let summary = OutcomeSummary("events verified", keys: ["events.verified", "events.rejected", "events.unverifiable"])
    let metrics: RelayMetrics
    let logger: Logger
    public let stopping = StopFlag()

    public init(store: any EventStore, wake: WakeSignal, configuration: VerificationQueueConfiguration, owner: String,
                handOffs: VerificationInbox?, completers: Completers, metrics: RelayMetrics, logger: Logger) {
        self.store = store
        self.wake = wake
        self.configuration = configuration
        self.owner = owner
        self.handOffs = handOffs
        self.completers = completers
        self.metrics = metrics
        self.logger = logger
    }

    public var loop: WorkLoop {
        WorkLoop(configuration, wake: wake, logger: logger)
    }

    /// The events ingest handed over first, then a claim for the rest when it is due.
    public func next(upTo free: Int) async throws -> [VerificationTask] {
        let asked = wake.takeClaimRequest()
        return try await claims.after((handOffs?.take(upTo: free) ?? []).map(\.item), free: free, every: configuration.pollInterval,
                                      asked: asked) { room in
            try await store.claimVerifications(owner: owner, limit: room, lease: configuration.lease)
        }
    }

    /// Records what the worker decided for `task` (a failure: a store read it needed failed):
    /// its outcome, or its next try. Its deliveries wake the delivery worker (the completer's
    /// hand-off), not this loop.
    public func complete(_ task: VerificationTask, _ decided: Result<VerificationResult, any Error>) async -> WorkLeft {
        await record(task, decided)
        return .nothing
    }

    private func record(_ task: VerificationTask, _ decided: Result<VerificationResult, any Error>) async {
        do {
            let result = try decided.get()
            if Task.isCancelled {
                // Hard stop mid-request: give the item back for another worker.
                await Task { try? await store.releaseVerification(task, owner: owner) }.value
                return
            }
            switch result.next {
            case .finish(let outcome):
                await finish(task, outcome, answered: result.answered)
            case .retry(let delay, let reason):
                logger.notice(reason == .providerUnavailable ? "provider unavailable, will retry" : "provider refused EchoRelay's credentials, will retry",
                              metadata: Self.metadata(task, result.answered.merging(["retry.in": "\(DurationText.format(delay))"]) { $1 }))
                _ = try await store.retryVerification(task, owner: owner, after: delay)
            }
        } catch {
            // The lease runs out and another try follows.
            logger.error("recording the verification failed", metadata: Self.metadata(task, ["error": "\(error)"]))
        }
    }

    private func finish(_ task: VerificationTask, _ outcome: VerificationOutcome, answered: Logger.Metadata) async {
        do {
            let written = try await completers.finish(task, owner: owner, outcome: outcome)
            guard written.kept else {
                logger.warning("lease lost before the outcome was recorded; another worker has the event",
                               metadata: Self.metadata(task, answered))
                return
            }
            // A verified event is one line among many (debug, and the summary at info);
            // a rejected or unverifiable one is what support looks for.
            logger.log(level: outcome.status == .verified ? .debug : .notice, "event \(outcome.status.rawValue)",
                       metadata: Self.metadata(task, answered.merging(["verify.reason": "\(outcome.reason.rawValue)"]) { $1 }))
            summary.count("events.\(outcome.status.rawValue)", logger: logger)
            metrics.verificationFinished(status: outcome.status, reason: outcome.reason.rawValue)
        } catch {
            logger.error("recording the verification failed", metadata: Self.metadata(task, answered.merging(["error": "\(error)"]) { $1 }))
        }
    }

    /// What a log line about `task` carries. Built only for a line that is written: setting
    /// a logger's metadata key by key formatted it anew each time (3% of serve's CPU in perf).
    public static func metadata(_ task: VerificationTask, _ more: Logger.Metadata = [:]) -> Logger.Metadata {
        more.merging(["event.id": "\(task.eventID)", "user.id": "\(task.userID)", "verify.attempt": "\(task.attempts)"]) { mine, _ in mine }
    }
}

/// The verification queue's settings (the verify worker's configuration gives them).
public struct VerificationQueueConfiguration: WorkLoopSettings {
    public var lease: Duration = .seconds(60)
    public var pollInterval: Duration = .seconds(1)
    public var shutdownGrace: Duration = .seconds(10)
    /// Provider requests in flight at once.
    public var concurrency = 32

    public init() {}
}
