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

    /// What of these the queue keeps to.
    var queue: VerificationQueueConfiguration {
        var queue = VerificationQueueConfiguration()
        queue.lease = lease
        queue.pollInterval = pollInterval
        queue.shutdownGrace = shutdownGrace
        queue.concurrency = concurrency
        return queue
    }
}

/// Verifies pending events: asks the provider over the event's path (OAuth Echo, or OAuth 2
/// introspection and UserInfo) and classifies its answer into an outcome or a later try
/// (docs/identity-provider.md, the outcome tables). An event that came as a Security Event
/// Token is verified by its signature. What to verify, and the record of each outcome, are
/// the queue's (`VerificationQueue`).
public struct VerifyWorker: Service, CustomStringConvertible {
    public var description: String { "VerifyWorker" }

    let store: any EventStore
    /// OAuth Echo's checks; nil: this process verifies no echo events.
    let policy: EchoPolicy?
    /// The OAuth 2 authorization server; nil: this process verifies no OAuth 2 events.
    let authorizationServer: AuthorizationServer?
    /// The time limit of one request to the provider (echo, introspection or UserInfo).
    let echoTimeout: Duration
    let configuration: VerifyWorkerConfiguration
    let queue: VerificationQueue
    /// Opens once the schema is ready; the worker claims nothing before.
    let ready: Gate
    let logger: Logger

    public init(
        store: any EventStore, policy: EchoPolicy?, authorizationServer: AuthorizationServer? = nil, echoTimeout: Duration,
        wake: WakeSignal,
        configuration: VerifyWorkerConfiguration, owner: String, ready: Gate = Gate(open: true), completers: Completers,
        verificationHandOffs: VerificationInbox? = nil, metrics: RelayMetrics = RelayMetrics(), logger: Logger
    ) {
        queue = VerificationQueue(store: store, wake: wake, configuration: configuration.queue, owner: owner,
                                  handOffs: verificationHandOffs, completers: completers, metrics: metrics, logger: logger)
        self.store = store
        self.policy = policy
        self.authorizationServer = authorizationServer
        self.echoTimeout = echoTimeout
        self.configuration = configuration
        self.ready = ready
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
        await queue.run(ready: ready) { task in await Result { try await work(task, clients: clients) } }
        await clients.echo?.shutdown()
        await clients.oauth2?.shutdown()
    }

    /// Decides one event: its outcome, or when to try again (after the last try of the
    /// schedule, unverifiable for the reason the tries failed).
    func work(_ task: VerificationTask, clients: ProviderClients) async throws -> VerificationResult {
        // What the provider said, for the log lines that follow.
        var answered: Logger.Metadata = [:]
        let exhausted: VerificationReason
        switch try await decide(task, clients: clients, answered: &answered) {
        case .final(let outcome):
            return VerificationResult(.finish(outcome), answered: answered)
        case .retry:
            exhausted = .providerUnavailable
        case .retryOrGiveUp(let reason):
            exhausted = reason
        }
        guard task.attempts <= configuration.retrySchedule.count else {
            return VerificationResult(.finish(.unverifiable(exhausted)), answered: answered)
        }
        return VerificationResult(.retry(after: configuration.retrySchedule[task.attempts - 1], reason: exhausted), answered: answered)
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
        logger.error("an event needs a provider this process is not configured for", metadata: VerificationQueue.metadata(task, [
            "verify.path": "\(task.path.rawValue)", "setting": "\(setting)",
        ]))
        return .final(.unverifiable(.providerNotConfigured))
    }

}

/// The HTTP clients of the providers this process verifies with.
struct ProviderClients: Sendable {
    let echo: EchoClient?
    let oauth2: OAuth2Client?
}
