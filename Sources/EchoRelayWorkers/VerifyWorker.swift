import EchoRelayCore
import EchoRelayQueue
import Logging
import ServiceLifecycle

/// Settings of the verify workers.
public struct VerifyWorkerConfiguration: Sendable {
    /// How long a claimed item stays with its worker; it outlives the echo timeout, so a
    /// live worker always finishes before another may take the item.
    public var lease: Duration = .seconds(60)
    /// Delays between tries: N delays mean N retries, N + 1 tries. The default stays inside
    /// the provider's 5-minute timestamp window.
    public var retrySchedule: [Duration] = [.seconds(1), .seconds(5), .seconds(15), .seconds(30), .seconds(60), .seconds(120)]
    /// The longest an idle worker waits before looking for work again, in case a wake-up was lost.
    public var pollInterval: Duration = .seconds(1)
    /// At a graceful stop, how long in-flight items may take to finish before they are
    /// cancelled and handed back for another process.
    public var shutdownGrace: Duration = .seconds(10)
    /// Echo requests in flight at once.
    public var concurrency = 32

    public init() {}
}

/// Verifies pending events: claims due items in batches under a lease, asks the provider over
/// the event's path (OAuth Echo, or OAuth 2 introspection and UserInfo), and records the
/// outcome (docs/identity-provider.md, the outcome tables). An event that came as a Security
/// Event Token is recorded verified by its signature.
public struct VerifyWorker: Service, CustomStringConvertible {
    public var description: String { "VerifyWorker" }

    let store: any EventStore
    /// OAuth Echo's checks; nil: this process verifies no echo events.
    let policy: EchoPolicy?
    /// The OAuth 2 authorization server; nil: this process verifies no OAuth 2 events.
    let authorizationServer: AuthorizationServer?
    /// The time limit of one request to the provider (echo, introspection or UserInfo).
    let echoTimeout: Duration
    let wake: WakeSignal
    let configuration: VerifyWorkerConfiguration
    let owner: String
    /// Opens once the schema is ready; the worker claims nothing before.
    let ready: Gate
    /// Where outcomes are written; the deliveries they make go to the delivery worker from there.
    let completers: Completers
    /// Events this process's ingest handed to it, leased already (nil: none).
    let verificationHandOffs: VerificationInbox?
    let claims = ClaimPacing()
    let summary = OutcomeSummary("events verified", keys: ["events.verified", "events.rejected", "events.unverifiable"])
    let metrics: RelayMetrics
    let logger: Logger

    public init(
        store: any EventStore, policy: EchoPolicy?, authorizationServer: AuthorizationServer? = nil, echoTimeout: Duration,
        wake: WakeSignal,
        configuration: VerifyWorkerConfiguration, owner: String, ready: Gate = Gate(open: true), completers: Completers,
        verificationHandOffs: VerificationInbox? = nil, metrics: RelayMetrics = RelayMetrics(), logger: Logger
    ) {
        self.completers = completers
        self.verificationHandOffs = verificationHandOffs
        self.metrics = metrics
        self.ready = ready
        self.store = store
        self.policy = policy
        self.authorizationServer = authorizationServer
        self.echoTimeout = echoTimeout
        self.wake = wake
        self.configuration = configuration
        self.owner = owner
        self.logger = logger
    }

    public func run() async throws {
        // The clients live exactly as long as the worker runs, and are shut down after it.
        let clients = ProviderClients(
            echo: policy.map { _ in EchoClient(timeout: echoTimeout, connectionsPerHost: configuration.concurrency) },
            oauth2: authorizationServer.map {
                OAuth2Client(server: $0, timeout: echoTimeout, connectionsPerHost: configuration.concurrency)
            }
        )
        let stopping = StopFlag()
        await withGracefulShutdownHandler {
            await ready.wait()
            await work(clients: clients, until: stopping)
        } onGracefulShutdown: {
            stopping.set()
            wake.wake()
            ready.open()  // a worker still waiting for the schema just exits
        }
        await clients.echo?.shutdown()
        await clients.oauth2?.shutdown()
    }

    private func work(clients: ProviderClients, until stopping: StopFlag) async {
        let loop = WorkLoop(concurrency: configuration.concurrency, pollInterval: configuration.pollInterval,
                            shutdownGrace: configuration.shutdownGrace, wake: wake, logger: logger)
        await loop.run(until: stopping) { free in
            // The events ingest handed over first, then a claim for the rest when it is due.
            let asked = wake.takeClaimRequest()
            return try await claims.after((verificationHandOffs?.take(upTo: free) ?? []).map(\.item), free: free, every: configuration.pollInterval,
                                          asked: asked) { room in
                try await store.claimVerifications(owner: owner, limit: room, lease: configuration.lease)
            }
        } process: { task in
            await process(task, clients: clients)
            return .nothing  // its deliveries wake the delivery workers (`deliveriesCreated`), not this loop
        }
    }

    func process(_ task: VerificationTask, clients: ProviderClients) async {
        // What the provider said, for the log lines that follow.
        var answered: Logger.Metadata = [:]
        do {
            let decision = try await decide(task, clients: clients, answered: &answered)
            if Task.isCancelled {
                // Hard stop mid-request: give the item back for another worker.
                await Task { try? await store.releaseVerification(task, owner: owner) }.value
                return
            }
            let exhausted: VerificationReason
            switch decision {
            case .final(let outcome):
                await finish(task, outcome, answered: answered)
                return
            case .retry:
                exhausted = .providerUnavailable
            case .retryOrGiveUp(let reason):
                exhausted = reason
            }
            guard task.attempts <= configuration.retrySchedule.count else {
                await finish(task, .unverifiable(exhausted), answered: answered)
                return
            }
            let delay = configuration.retrySchedule[task.attempts - 1]
            logger.notice(exhausted == .providerUnavailable ? "provider unavailable, will retry" : "provider refused EchoRelay's credentials, will retry",
                          metadata: Self.metadata(task, answered.merging(["retry.in": "\(DurationText.format(delay))"]) { $1 }))
            _ = try await store.retryVerification(task, owner: owner, after: delay)
        } catch {
            // The lease runs out and another try follows.
            logger.error("recording the verification failed", metadata: Self.metadata(task, answered.merging(["error": "\(error)"]) { $1 }))
        }
    }

    /// Asks the provider by the event's path, or decides without asking.
    private func decide(_ task: VerificationTask, clients: ProviderClients, answered: inout Logger.Metadata) async throws -> VerificationDecision {
        switch task.path {
        case .set:
            // A SET's signature, issuer and audience were checked when it arrived: the
            // transmitter's signed word is the provider's answer, and no request is made.
            return .final(VerificationOutcome(status: .verified, reason: .setSignature, providerUserID: task.userID,
                                              providerPhoneNumber: task.pushedPhoneNumber))
        case .oauth2:
            guard let credentials = task.oauth2 else { return .final(.unverifiable(.oauth2Missing)) }
            guard let client = clients.oauth2 else { return notConfigured(task, "ECHORELAY_OAUTH2_INTROSPECTION_URL") }
            return try await OAuth2Verification(client: client, store: store).decide(task, credentials, answered: &answered)
        case .echo:
            guard let echo = task.echo else { return .final(.unverifiable(.echoMissing)) }
            guard let policy, let client = clients.echo else { return notConfigured(task, "ECHORELAY_CONSUMER_KEY") }
            return try await EchoVerification(client: client, policy: policy, store: store).decide(task, echo, answered: &answered)
        }
    }

    /// An event of a path this process has no provider for: another process may, so support
    /// re-verifies it once the setting is fixed.
    private func notConfigured(_ task: VerificationTask, _ setting: String) -> VerificationDecision {
        logger.error("an event needs a provider this process is not configured for", metadata: Self.metadata(task, [
            "verify.path": "\(task.path.rawValue)", "setting": "\(setting)",
        ]))
        return .final(.unverifiable(.providerNotConfigured))
    }

    /// What a log line about `task` carries. Built only for a line that is written: setting
    /// a logger's metadata key by key formatted it anew each time (3% of serve's CPU in perf).
    static func metadata(_ task: VerificationTask, _ more: Logger.Metadata = [:]) -> Logger.Metadata {
        more.merging(["event.id": "\(task.eventID)", "user.id": "\(task.userID)", "verify.attempt": "\(task.attempts)"]) { mine, _ in mine }
    }

    private func finish(_ task: VerificationTask, _ outcome: VerificationOutcome, answered: Logger.Metadata) async {
        do {
            let written = try await completers.finish(task, owner: owner, outcome: outcome)
            if written.kept {
                // A verified event is one line among many (debug, and the summary at info);
                // a rejected or unverifiable one is what support looks for.
                logger.log(level: outcome.status == .verified ? .debug : .notice, "event \(outcome.status.rawValue)",
                           metadata: Self.metadata(task, answered.merging(["verify.reason": "\(outcome.reason.rawValue)"]) { $1 }))
                summary.count("events.\(outcome.status.rawValue)", logger: logger)
                metrics.verificationFinished(status: outcome.status, reason: outcome.reason.rawValue)
            } else {
                logger.warning("lease lost before the outcome was recorded; another worker has the event",
                               metadata: Self.metadata(task, answered))
            }
        } catch {
            logger.error("recording the verification failed", metadata: Self.metadata(task, answered.merging(["error": "\(error)"]) { $1 }))
        }
    }
}

/// The HTTP clients of the providers this process verifies with.
struct ProviderClients: Sendable {
    let echo: EchoClient?
    let oauth2: OAuth2Client?
}
