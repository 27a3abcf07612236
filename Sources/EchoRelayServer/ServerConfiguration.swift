import EchoRelayCore
import EchoRelayHTTP
import EchoRelaySharedSignals
import EchoRelayWorkers

/// Everything `echorelay serve` is configured with, after flags and environment are merged.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// `postgres://…` or `sqlite:PATH`; nil keeps everything in `echorelay.sqlite` in the
    /// working folder. A PostgreSQL password is a secret and is never logged.
    public var databaseURL: Secret?
    /// `whsec_` secrets; a signature by any one of them is accepted (rotation).
    public var ingestSecrets: [Secret]
    public var adminToken: Secret?
    /// `ECHORELAY_SECRET_KEY`: base64 AES-256 keys, comma-separated, the sealing one first,
    /// that encrypt subscription secrets in the database; nil stores them in plain text.
    public var secretKey: Secret?
    public var migrateAtStart: Bool
    public var role: ServerRole
    public var echo: EchoConfiguration
    public var delivery: DeliveryConfiguration
    /// How long a client has to send a request's body, and the longest a connection may sit
    /// idle or be slow to send a request's head, before it is closed.
    public var requestTimeout: Duration
    /// At SIGTERM, how long in-flight echo requests and deliveries may take before they are
    /// cancelled and handed back.
    public var shutdownGrace: Duration
    /// How long an ingest may wait for its commit before it is answered `503` (nothing
    /// stored; the provider retries the same id safely).
    public var ingestWait: Duration
    /// `ECHORELAY_DURABILITY`: what a `202` (and any acknowledged change) waits for. With
    /// `.standby`, a standby's flush, for up to `ingestWait`; PostgreSQL only.
    public var durability: Durability = .local
    /// `ECHORELAY_AUTH_FAILURE_LIMIT`: failed authentications a client address may make in a
    /// minute before its next attempts are answered `429` until the minute is over.
    public var authenticationFailureLimit = AuthenticationThrottle.defaultLimit
    /// `ECHORELAY_TRUSTED_PROXIES`: the proxies whose `X-Forwarded-For` names the client.
    public var trustedProxies: [AddressRange] = []
    /// `ECHORELAY_MAX_SUBSCRIPTIONS_PER_APP`: past it, an app's next subscription is `422`.
    public var maxSubscriptionsPerApp = HTTPDependencies.defaultMaxSubscriptionsPerApp
    /// `ECHORELAY_METRICS_TOKEN`: when set, `GET /metrics` asks for it as a bearer token.
    public var metricsToken: Secret?
    /// How often the queue and subscription gauges of `/metrics` are read from the database.
    public var metricsSampleInterval: Duration = .seconds(10)
    /// `ECHORELAY_BACKLOG_LIMIT`: past this many events received and not yet final, ingest
    /// answers `503` with `Retry-After` and stores nothing; nil: no limit.
    public var backlogLimit: Int?
    /// How often each ingest process reads the backlog: the bound holds to within what
    /// arrives in one interval.
    public var backlogSampleInterval: Duration

    /// How often a process that serves the console deletes expired console sessions.
    public var consoleSessionSweepInterval: Duration

    /// What is kept how long once final (`ECHORELAY_RETAIN_*`), and how often worker
    /// processes prune the rest (`ECHORELAY_PRUNE_INTERVAL`).
    public var retention: RetentionPolicy
    public var pruneInterval: Duration

    /// `POST /v1/sets` (`ECHORELAY_SET_*`); nil: no Shared Signals transmitter, the route is off.
    public var securityEvents: SecurityEventReceiverSettings?

    /// Re-verification with an OAuth 2 authorization server (`ECHORELAY_OAUTH2_*`); nil: events
    /// must carry echo headers.
    public var oauth2: OAuth2Configuration?

    /// How the first-run welcome spells this program in the commands it prints: `echorelay`
    /// when that is on PATH, else the way it was started (`swift run echorelay`).
    public var commandName = "echorelay"

    /// A few seconds of drain on two cores. A larger backlog drains slower (more parked
    /// queues behind each head, larger scans): at twice the sustained rate, completions fell to
    /// 0.43–0.75× of it with 10,000 and held at 0.80–0.98× with 2,000 (BENCHMARKS.md, run R).
    public static let defaultBacklogLimit = 2_000

    public init(
        host: String = "127.0.0.1", port: Int = 8080, databaseURL: Secret?, ingestSecrets: [Secret],
        adminToken: Secret?, secretKey: Secret? = nil, migrateAtStart: Bool = true, role: ServerRole = .all, echo: EchoConfiguration,
        delivery: DeliveryConfiguration = DeliveryConfiguration(), requestTimeout: Duration = .seconds(30),
        shutdownGrace: Duration = .seconds(10), ingestWait: Duration = .seconds(10),
        backlogLimit: Int? = defaultBacklogLimit, backlogSampleInterval: Duration = .milliseconds(500),
        consoleSessionSweepInterval: Duration = .seconds(300), retention: RetentionPolicy = .defaults,
        pruneInterval: Duration = .seconds(60), securityEvents: SecurityEventReceiverSettings? = nil,
        oauth2: OAuth2Configuration? = nil
    ) {
        self.oauth2 = oauth2
        self.retention = retention
        self.pruneInterval = pruneInterval
        self.securityEvents = securityEvents
        self.consoleSessionSweepInterval = consoleSessionSweepInterval
        self.backlogLimit = backlogLimit
        self.backlogSampleInterval = backlogSampleInterval
        self.ingestWait = ingestWait
        self.shutdownGrace = shutdownGrace
        self.delivery = delivery
        self.requestTimeout = requestTimeout
        self.secretKey = secretKey
        self.role = role
        self.host = host
        self.port = port
        self.databaseURL = databaseURL
        self.ingestSecrets = ingestSecrets
        self.adminToken = adminToken
        self.migrateAtStart = migrateAtStart
        self.echo = echo
    }
}

extension ServerConfiguration {
    /// The largest limit: a reading counts up to twice it, and a larger backlog than this
    /// is a queue of days, not a bound.
    public static let maximumBacklogLimit = 100_000_000

    func validateSecurityEvents() throws {
        if let problem = securityEvents?.problems.first {
            throw ConfigurationError(setting: problem.setting, reason: problem.reason)
        }
    }

    /// The proofs ingest takes: those of the providers configured.
    public var acceptedProofs: AcceptedProofs {
        AcceptedProofs(echo: echo.isConfigured, oauth2: oauth2 != nil, oauth2UserInfo: oauth2?.userInfoURL != nil)
    }

    /// OAuth Echo may be left out only where OAuth 2 is configured: some provider must confirm events.
    func validateProviders() throws {
        if echo.isConfigured || oauth2 == nil { try echo.validateProvider() }
        try echo.validate()
        try oauth2?.validate()
    }

    func validatePruneInterval() throws {
        guard pruneInterval >= .seconds(1) else {
            throw ConfigurationError(setting: "ECHORELAY_PRUNE_INTERVAL", reason: "must be 1s or more, so pruning rests between rounds")
        }
    }

    func validateBacklog() throws {
        if let backlogLimit, !(1...Self.maximumBacklogLimit).contains(backlogLimit) {
            throw ConfigurationError(
                setting: "ECHORELAY_BACKLOG_LIMIT",
                reason: "must be a whole number of events from 1 to \(Self.maximumBacklogLimit), or off, got \(backlogLimit)"
            )
        }
        guard backlogSampleInterval > .zero else {
            throw ConfigurationError(setting: "ECHORELAY_BACKLOG_LIMIT", reason: "the sampling interval must be positive")
        }
    }
}

/// What one `serve` process does: the HTTP API, the workers, or both. Any number of each
/// may share one database.
public enum ServerRole: String, Sendable, CaseIterable {
    case all, ingest, workers

    var servesAPI: Bool { self != .workers }
    var runsWorkers: Bool { self != .ingest }
}

/// How events are re-verified with OAuth Echo.
public struct EchoConfiguration: Sendable {
    /// The app's own OAuth consumer key: every echo header must carry it.
    public var consumerKey: String
    /// `host` (the scheme's default port) or `host:port` entries.
    public var allowedHosts: [String]
    /// Allows plain-http providers; for local testing only.
    public var allowHTTP: Bool
    public var timeout: Duration
    public var retrySchedule: [Duration]
    public var lease: Duration
    public var concurrency: Int
    public var pollInterval: Duration

    public init(
        consumerKey: String, allowedHosts: [String], allowHTTP: Bool = false, timeout: Duration = .seconds(5),
        retrySchedule: [Duration] = [.seconds(1), .seconds(5), .seconds(15), .seconds(30), .seconds(60), .seconds(120)],
        lease: Duration = .seconds(60), concurrency: Int = 32, pollInterval: Duration = .seconds(1)
    ) {
        self.consumerKey = consumerKey
        self.allowedHosts = allowedHosts
        self.allowHTTP = allowHTTP
        self.timeout = timeout
        self.retrySchedule = retrySchedule
        self.lease = lease
        self.concurrency = concurrency
        self.pollInterval = pollInterval
    }

    /// Whether an OAuth Echo provider is configured at all (a half-configured one is refused).
    public var isConfigured: Bool { !consumerKey.isEmpty || !allowedHosts.isEmpty }

    /// Refuses a missing or half-configured OAuth Echo provider, naming the variable to fix.
    func validateProvider() throws {
        guard !consumerKey.isEmpty else {
            throw ConfigurationError(setting: "ECHORELAY_CONSUMER_KEY", reason: "is required: the app's OAuth consumer key, which every echo header must carry (or re-verify over OAuth 2 only: ECHORELAY_OAUTH2_INTROSPECTION_URL; to try EchoRelay on this machine without a provider: echorelay serve --demo, then echorelay demo)")
        }
        guard !allowedHosts.isEmpty else {
            throw ConfigurationError(setting: "ECHORELAY_ECHO_ALLOWED_HOSTS", reason: "is required: the provider hosts EchoRelay may send OAuth Echo requests to (host or host:port, comma-separated; to try EchoRelay on this machine: echorelay serve --demo)")
        }
        for entry in allowedHosts where entry.isEmpty || entry.contains("/") || entry.contains("@") || entry.contains("://") {
            throw ConfigurationError(setting: "ECHORELAY_ECHO_ALLOWED_HOSTS", reason: "entry \"\(entry)\" must be a bare host or host:port")
        }
    }

    /// Refuses timings that cannot work, whichever providers are configured.
    func validate() throws {
        guard timeout > .zero else { throw ConfigurationError(setting: "ECHORELAY_ECHO_TIMEOUT", reason: "must be positive") }
        guard lease > timeout else {
            throw ConfigurationError(setting: "ECHORELAY_LEASE", reason: "must be longer than ECHORELAY_ECHO_TIMEOUT (\(DurationText.format(timeout))), got \(DurationText.format(lease)), so a live worker always finishes before its item is handed to another")
        }
        guard concurrency > 0 else { throw ConfigurationError(setting: "ECHORELAY_VERIFY_CONCURRENCY", reason: "must be at least 1") }
    }
}

/// A configuration value that cannot be used, named by its environment variable.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let setting: String
    public let reason: String

    public init(setting: String, reason: String) {
        self.setting = setting
        self.reason = reason
    }

    public var description: String { "\(setting): \(reason)" }
}

/// How verified updates are delivered to subscribers.
public struct DeliveryConfiguration: Sendable {
    /// Time limit of one webhook request, answer included.
    public var timeout: Duration
    /// How long a webhook may take to connect (`ECHORELAY_DELIVERY_CONNECT_TIMEOUT`); nil: 3 s,
    /// or the delivery timeout if that is shorter.
    public var connectTimeout: Duration?
    public var effectiveConnectTimeout: Duration { min(connectTimeout ?? .seconds(3), timeout) }
    /// Delays between tries; N delays mean N retries. Each gets ±10% jitter.
    public var retrySchedule: [Duration]
    /// A subscription whose deliveries have all failed for this long is disabled.
    public var disableAfter: Duration
    /// Allows loopback and private subscriber addresses, and plain http (local testing).
    public var allowPrivateSubscribers: Bool
    /// Private hosts and ranges allowed over https (`ECHORELAY_PRIVATE_SUBSCRIBERS`).
    public var privateSubscribers: PrivateSubscriberAllowList
    /// A PEM file of certificate authorities trusted for subscribers' TLS besides the system's
    /// (`ECHORELAY_SUBSCRIBER_CA_FILE`).
    public var subscriberCAFile: String?
    /// Where subscribers' names are looked up (the process's threads for it). Not a setting:
    /// tests give look-ups whose answers they choose.
    public var nameLookups: NameLookups
    public var concurrency: Int
    public var perSubscriptionConcurrency: Int
    /// Replayed deliveries a bulk replay creates per second (`ECHORELAY_REPLAY_RATE`).
    public var replayRate: Int
    /// How long an attempt waits for its event's other deliveries to be written with them
    /// (`DeliveryWorkerConfiguration.siblingLinger`); not a setting, tests lengthen it.
    public var siblingLinger: Duration

    public init(
        timeout: Duration = .seconds(15), connectTimeout: Duration? = nil,
        retrySchedule: [Duration] = DeliveryRetryPolicy.defaultSchedule,
        disableAfter: Duration = .seconds(5 * 86_400), allowPrivateSubscribers: Bool = false,
        privateSubscribers: PrivateSubscriberAllowList = .none, subscriberCAFile: String? = nil,
        nameLookups: NameLookups = .system, concurrency: Int = 64,
        perSubscriptionConcurrency: Int = DeliveryWorkerConfiguration().perSubscriptionConcurrency,
        replayRate: Int = 50, siblingLinger: Duration = .milliseconds(20)
    ) {
        self.privateSubscribers = privateSubscribers
        self.subscriberCAFile = subscriberCAFile
        self.nameLookups = nameLookups
        self.replayRate = replayRate
        self.siblingLinger = siblingLinger
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.retrySchedule = retrySchedule
        self.disableAfter = disableAfter
        self.allowPrivateSubscribers = allowPrivateSubscribers
        self.concurrency = concurrency
        self.perSubscriptionConcurrency = perSubscriptionConcurrency
    }

    func validate(lease: Duration) throws {
        guard timeout > .zero else { throw ConfigurationError(setting: "ECHORELAY_DELIVERY_TIMEOUT", reason: "must be positive") }
        if let connectTimeout, connectTimeout <= .zero || connectTimeout > timeout {
            throw ConfigurationError(setting: "ECHORELAY_DELIVERY_CONNECT_TIMEOUT",
                                     reason: "must be positive and at most ECHORELAY_DELIVERY_TIMEOUT (\(DurationText.format(timeout))), got \(DurationText.format(connectTimeout))")
        }
        guard lease > timeout else {
            throw ConfigurationError(setting: "ECHORELAY_LEASE", reason: "must be longer than ECHORELAY_DELIVERY_TIMEOUT (\(DurationText.format(timeout))), got \(DurationText.format(lease)), so a live worker always finishes before its delivery is handed to another")
        }
        guard concurrency > 0 else { throw ConfigurationError(setting: "ECHORELAY_DELIVERY_CONCURRENCY", reason: "must be at least 1") }
        if let subscriberCAFile, let problem = SubscriberCAFile.problem(subscriberCAFile) {
            throw ConfigurationError(setting: "ECHORELAY_SUBSCRIBER_CA_FILE", reason: problem)
        }
        guard perSubscriptionConcurrency > 0 else {
            throw ConfigurationError(setting: "ECHORELAY_SUBSCRIPTION_CONCURRENCY", reason: "must be at least 1")
        }
        guard (1...100_000).contains(replayRate) else {
            throw ConfigurationError(setting: "ECHORELAY_REPLAY_RATE", reason: "must be from 1 to 100000 events per second")
        }
    }
}
