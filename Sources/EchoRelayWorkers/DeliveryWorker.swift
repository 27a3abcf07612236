import EchoRelayCore
import EchoRelayQueue
import Foundation
import Logging
import ServiceLifecycle


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

    /// What of these the queue keeps to.
    var queue: DeliveryQueueConfiguration {
        var queue = DeliveryQueueConfiguration()
        queue.lease = lease
        queue.timeout = timeout
        queue.pollInterval = pollInterval
        queue.shutdownGrace = shutdownGrace
        queue.concurrency = concurrency
        queue.perSubscriptionConcurrency = perSubscriptionConcurrency
        queue.disableAfter = disableAfter
        queue.siblingLinger = siblingLinger
        return queue
    }
}

/// Sends verified updates to subscribers: checks the subscriber's address, signs the
/// delivery with every active secret of its subscription, POSTs it, and classifies the answer
/// into what follows (`DeliveryRetryPolicy`). What to send, and the record of each attempt,
/// are the queue's (`DeliveryQueue`).
public struct DeliveryWorker: Service, CustomStringConvertible {
    public var description: String { "DeliveryWorker" }

    let configuration: DeliveryWorkerConfiguration
    let queue: DeliveryQueue
    let ready: Gate
    /// Parsed signing keys by secret. A rotation makes a new secret, so an entry is never stale.
    let signingKeys = BoundedCache<Secret, WebhookSecret>(capacity: 256)
    let addressChecks: AddressChecks

    /// - completers: the process's (`serve` shares one between its workers); nil: its own,
    ///   handing off to `handOffs`.
    public init(store: any DeliveryStore & CompletionStatements, wake: WakeSignal, configuration: DeliveryWorkerConfiguration,
                owner: String, handOffs: DeliveryInbox? = nil, completers: Completers? = nil, ready: Gate = Gate(open: true),
                metrics: RelayMetrics = RelayMetrics(), logger: Logger) {
        let handOffs = handOffs ?? Self.inbox(owner: owner, configuration: configuration)
        let completers = completers ?? Completers(statements: store, deliveries: HandOffTarget(inbox: handOffs, wake: wake), metrics: metrics)
        queue = DeliveryQueue(store: store, wake: wake, configuration: configuration.queue, owner: owner, handOffs: handOffs,
                              completers: completers, metrics: metrics, logger: logger)
        addressChecks = AddressChecks(configuration)
        self.configuration = configuration
        self.ready = ready
    }

    /// The inbox a worker with this owner and configuration hands off to.
    public static func inbox(owner: String, configuration: DeliveryWorkerConfiguration) -> DeliveryInbox {
        DeliveryQueue.inbox(owner: owner, lease: configuration.lease)
    }

    public func run() async throws {
        let client = WebhookClient(timeout: configuration.timeout, connectTimeout: configuration.connectTimeout, caFile: configuration.subscriberCAFile,
                                   connectionsPerHost: configuration.concurrency)
        await queue.run(ready: ready) { outgoing in await send(outgoing, client: client) }
        await client.shutdown()
    }

    /// Sends one delivery, and says what follows from its answer.
    func send(_ outgoing: Outgoing, client: WebhookClient) async -> AttemptRecord {
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
        let attempt = DeliveryAttempt(
            startedAt: startedAt, duration: clock.now - start, statusCode: answer.statusCode, errorKind: answer.errorKind,
            error: answer.error, responseHead: answer.responseHead
        )
        var random = SystemRandomNumberGenerator()
        return AttemptRecord(task: task, attempt: attempt,
                             next: configuration.retry.next(after: Self.result(of: answer), attempts: task.attempts, random: &random))
    }

    /// What an answer means for the delivery: a 2xx delivered it, a 410 ends the
    /// subscription, a 429 or 503 may say when to try again; anything else failed.
    static func result(of answer: WebhookClient.Answer) -> DeliveryAttemptResult {
        switch answer.statusCode {
        case let code? where (200..<300).contains(code): .success
        case 410?: .gone
        case let code? where code == 429 || code == 503: .failed(retryAfter: answer.retryAfter.flatMap { DeliveryRetryPolicy.retryAfter($0) })
        default: .failed(retryAfter: nil)
        }
    }

    /// Standard Webhooks headers, signed with every active secret of the task's subscription.
    func headers(for task: DeliveryTask, body: [UInt8]) -> [(String, String)] {
        let secrets = task.secrets.compactMap { secret in
            try? signingKeys.value(for: secret) { () throws(WebhookSecretError) in try WebhookSecret(secret.revealed) }
        }
        return WebhookClient.signedHeaders(webhookID: task.webhookID, body: body, secrets: secrets)
    }
}
