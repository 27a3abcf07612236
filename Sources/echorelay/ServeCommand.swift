import ArgumentParser
import EchoRelayCore
import EchoRelayServer
import Hummingbird
import Logging
import NIOCore

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the EchoRelay server: the ingest endpoint and the API.",
        discussion: """
            SIGTERM or SIGINT stops it gracefully: it stops taking requests, lets in-flight ones \
            finish, gives in-flight echo requests and deliveries ECHORELAY_SHUTDOWN_GRACE to finish, \
            then cancels them and hands them back to the database for another process, and exits.

            Secrets at rest: with ECHORELAY_SECRET_KEY (make one with `echorelay secret-key`), \
            subscription signing secrets are stored encrypted (AES-256-GCM); without it, in plaintext, \
            with a warning at start. Keep the key apart from the database and its backups.
            To rotate the key:
              1. set ECHORELAY_SECRET_KEY=<new>,<old> (new first); restart every serve
              2. run: echorelay reseal   (with the same ECHORELAY_SECRET_KEY)
              3. set ECHORELAY_SECRET_KEY=<new>; restart again
            """
    )

    @Option(help: "Address to listen on. (env: ECHORELAY_HOST, default: 127.0.0.1)")
    var host: String?

    @Option(help: "Port to listen on. (env: ECHORELAY_PORT, default: 8080)")
    var port: Int?

    @Option(help: "Where the data lives: a PostgreSQL URL, postgres://user:password@host:5432/database[?sslmode=disable|prefer|require], for production and several processes; or sqlite:PATH, an embedded file for one process. (env: ECHORELAY_DATABASE_URL, default: sqlite:echorelay.sqlite in the working folder)")
    var databaseURL: String?

    @Option(help: "Comma-separated whsec_ secrets the identity provider signs events with; any one of them is accepted, for rotation. (env: ECHORELAY_INGEST_SECRETS; required on PostgreSQL; on the embedded store one is made on the first run and kept there)")
    var ingestSecrets: String?

    @Option(help: "Bearer token with the admin role. (env: ECHORELAY_ADMIN_TOKEN; on the embedded store's first run without one, an admin token is made and printed once)")
    var adminToken: String?

    @Option(help: "Comma-separated base64 AES-256 keys that encrypt subscription secrets in the database; the first seals, every one opens (rotation: <new>,<old>, then `echorelay reseal`). Make one with `echorelay secret-key`. (env: ECHORELAY_SECRET_KEY; unset: stored in plaintext, with a warning)")
    var secretKey: String?

    @Option(help: "What this process runs: all (the API and the workers), ingest (the API only) or workers (the workers, and health checks). (env: ECHORELAY_ROLE, default: all)")
    var role: String?

    @Option(help: "The app's OAuth consumer key; every echo header must carry it. (env: ECHORELAY_CONSUMER_KEY, required)")
    var consumerKey: String?

    @Option(help: "Comma-separated hosts EchoRelay may send OAuth Echo requests to: `host` (the scheme's default port) or `host:port`. (env: ECHORELAY_ECHO_ALLOWED_HOSTS, required)")
    var echoAllowedHosts: String?

    @Flag(help: "Allow plain-http OAuth Echo providers; for local testing only. (env: ECHORELAY_ECHO_ALLOW_HTTP=1)")
    var echoAllowHTTP = false

    @Option(help: "Time limit of one OAuth Echo request, such as 5s or 500ms. (env: ECHORELAY_ECHO_TIMEOUT, default: 5s)")
    var echoTimeout: String?

    @Option(help: "Comma-separated delays between echo tries; N delays mean N retries. Keep the sum inside the provider's 5-minute timestamp window. (env: ECHORELAY_ECHO_RETRY_SCHEDULE, default: 1s,5s,15s,30s,60s,120s)")
    var echoRetrySchedule: String?

    @Option(help: "How long a worker holds a claimed item before another process may take it; longer than the echo timeout. (env: ECHORELAY_LEASE, default: 60s)")
    var lease: String?

    @Option(help: "OAuth Echo requests in flight at once per process. (env: ECHORELAY_VERIFY_CONCURRENCY, default: 32)")
    var verifyConcurrency: Int?

    @Option(help: "Time limit of one webhook delivery, answer included. (env: ECHORELAY_DELIVERY_TIMEOUT, default: 15s)")
    var deliveryTimeout: String?

    @Option(help: "Comma-separated delays between delivery tries, each with ±10% jitter; N delays mean N retries, then the delivery is dead. (env: ECHORELAY_RETRY_SCHEDULE, default: 5s,5m,30m,2h,5h,10h,10h)")
    var retrySchedule: String?

    @Option(help: "Disable a subscription whose deliveries have all failed for this long. (env: ECHORELAY_DISABLE_AFTER, default: 5d)")
    var disableAfter: String?

    @Flag(help: "Allow subscriber URLs on loopback and private addresses, and plain http; for local testing only. (env: ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS=1)")
    var allowPrivateSubscribers = false

    @Option(help: "Comma-separated private hosts, IP addresses and CIDR ranges that may receive deliveries over https, such as an internal service network (hooks.internal,10.20.0.0/16); every other private address stays refused. (env: ECHORELAY_PRIVATE_SUBSCRIBERS, default: none)")
    var privateSubscribers: String?

    @Option(help: "A PEM file of certificate authorities trusted for subscribers' https besides the system's, such as an internal network's CA. (env: ECHORELAY_SUBSCRIBER_CA_FILE, default: none)")
    var subscriberCAFile: String?

    @Option(help: "Webhook deliveries in flight at once per process. (env: ECHORELAY_DELIVERY_CONCURRENCY, default: 64)")
    var deliveryConcurrency: Int?

    @Option(help: "Webhook deliveries in flight at once per subscription, so one slow backend cannot take every slot. (env: ECHORELAY_SUBSCRIPTION_CONCURRENCY, default: 8)")
    var subscriptionConcurrency: Int?

    @Option(help: "How long a client may take to send a request body, or be slow sending a request head or idle on a connection, before the connection is closed (slowloris and endless bodies cannot hold it). (env: ECHORELAY_REQUEST_TIMEOUT, default: 30s)")
    var requestTimeout: String?

    @Option(help: "At SIGTERM, how long in-flight echo requests and deliveries may take to finish before they are cancelled and handed back to the database for another process. (env: ECHORELAY_SHUTDOWN_GRACE, default: 10s)")
    var shutdownGrace: String?

    @Option(help: "Events a bulk replay sends per second (each event to each subscription counts once), so a replay cannot flood a backend. (env: ECHORELAY_REPLAY_RATE, default: 50)")
    var replayRate: Int?

    @Option(help: "Events received and not yet final (awaiting verification, or a delivery to an enabled subscription) past which ingest answers 503 with Retry-After and stores nothing, until the backlog drains below it; `off` for no limit. (env: ECHORELAY_BACKLOG_LIMIT, default: 10000)")
    var backlogLimit: String?

    @Option(help: "The Shared Signals transmitter's exact issuer (iss) whose Security Event Tokens POST /v1/sets accepts; with --set-audience and --set-jwks-url, turns the endpoint on. (env: ECHORELAY_SET_ISSUER, default: none, the endpoint is off)")
    var setIssuer: String?

    @Option(help: "EchoRelay's audience (aud) in the transmitter's SETs. (env: ECHORELAY_SET_AUDIENCE)")
    var setAudience: String?

    @Option(help: "The https URL of the transmitter's JWKS, whose keys sign its SETs. (env: ECHORELAY_SET_JWKS_URL)")
    var setJwksURL: String?

    @Flag(help: "Allow a plain-http JWKS URL; for local testing only. (env: ECHORELAY_SET_ALLOW_HTTP=1)")
    var setAllowHTTP = false

    @Option(help: "A token the transmitter must send as Authorization: Bearer with every SET, at least 16 characters. (env: ECHORELAY_SET_PUSH_TOKEN, default: none, no token required)")
    var setPushToken: String?

    @Flag(help: "Try EchoRelay on this machine with `echorelay demo`: accept OAuth Echo over plain http from the demo's stand-in identity provider on 127.0.0.1:8181 (consumer key echorelay-demo, unless ECHORELAY_CONSUMER_KEY is set) and deliver to subscribers on loopback. For trying it out only, never in production. (env: ECHORELAY_DEMO=1)")
    var demo = false

    @Flag(help: "Do not apply pending database migrations at start-up (run `echorelay migrate` yourself). (env: ECHORELAY_NO_MIGRATE=1)")
    var noMigrate = false

    @Option(help: "Threads for the network and the database connections (the event loops). Where serve shares a machine's cores with PostgreSQL, fewer threads than cores leave the database its share and save thread switches: on 2 cores, 1 for an ingest-role process (one that also verifies needs its threads for that). (env: ECHORELAY_THREADS, default: one a core)")
    var threads: Int?

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        // First, before anything starts the event loops: the count is read when they start.
        if let threads = try Setting.threads(threads) { NIOSingletons.groupLoopCountSuggestion = threads }
        let logger = try logging.bootstrap(label: "echorelay")
        let demo = self.demo || Setting.value(nil, "ECHORELAY_DEMO") == "1"
        var configuration = ServerConfiguration(
            host: Setting.value(host, "ECHORELAY_HOST") ?? "127.0.0.1",
            port: try Setting.integer(port, "ECHORELAY_PORT", default: 8080),
            databaseURL: Setting.value(databaseURL, "ECHORELAY_DATABASE_URL").map(Secret.init),
            ingestSecrets: Setting.list(ingestSecrets, "ECHORELAY_INGEST_SECRETS").map(Secret.init),
            adminToken: Setting.value(adminToken, "ECHORELAY_ADMIN_TOKEN").map(Secret.init),
            secretKey: Setting.value(secretKey, "ECHORELAY_SECRET_KEY").map(Secret.init),
            migrateAtStart: !(noMigrate || Setting.value(nil, "ECHORELAY_NO_MIGRATE") == "1"),
            role: try Setting.role(role),
            echo: EchoConfiguration(
                consumerKey: Setting.value(consumerKey, "ECHORELAY_CONSUMER_KEY") ?? "",
                allowedHosts: Setting.list(echoAllowedHosts, "ECHORELAY_ECHO_ALLOWED_HOSTS"),
                allowHTTP: echoAllowHTTP || Setting.value(nil, "ECHORELAY_ECHO_ALLOW_HTTP") == "1",
                timeout: try Setting.duration(echoTimeout, "ECHORELAY_ECHO_TIMEOUT", default: .seconds(5)),
                retrySchedule: try Setting.durations(echoRetrySchedule, "ECHORELAY_ECHO_RETRY_SCHEDULE", default: VerifyDefaults.retrySchedule),
                lease: try Setting.duration(lease, "ECHORELAY_LEASE", default: .seconds(60)),
                concurrency: try Setting.integer(verifyConcurrency, "ECHORELAY_VERIFY_CONCURRENCY", default: 32)
            ),
            delivery: DeliveryConfiguration(
                timeout: try Setting.duration(deliveryTimeout, "ECHORELAY_DELIVERY_TIMEOUT", default: .seconds(15)),
                retrySchedule: try Setting.durations(retrySchedule, "ECHORELAY_RETRY_SCHEDULE", default: DeliveryRetryPolicy.defaultSchedule),
                disableAfter: try Setting.duration(disableAfter, "ECHORELAY_DISABLE_AFTER", default: .seconds(5 * 86_400)),
                allowPrivateSubscribers: allowPrivateSubscribers || Setting.value(nil, "ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS") == "1",
                privateSubscribers: try Setting.privateSubscribers(privateSubscribers),
                subscriberCAFile: Setting.value(subscriberCAFile, "ECHORELAY_SUBSCRIBER_CA_FILE"),
                concurrency: try Setting.integer(deliveryConcurrency, "ECHORELAY_DELIVERY_CONCURRENCY", default: 64),
                perSubscriptionConcurrency: try Setting.integer(subscriptionConcurrency, "ECHORELAY_SUBSCRIPTION_CONCURRENCY", default: 8),
                replayRate: try Setting.integer(replayRate, "ECHORELAY_REPLAY_RATE", default: 50)
            ),
            requestTimeout: try Setting.duration(requestTimeout, "ECHORELAY_REQUEST_TIMEOUT", default: .seconds(30)),
            shutdownGrace: try Setting.duration(shutdownGrace, "ECHORELAY_SHUTDOWN_GRACE", default: .seconds(10)),
            backlogLimit: try Setting.backlogLimit(backlogLimit),
            securityEvents: try Setting.securityEvents(
                issuer: setIssuer, audience: setAudience, jwksURL: setJwksURL, allowHTTP: setAllowHTTP, pushToken: setPushToken
            )
        )
        if demo {
            configuration.enableDemo()
            logger.warning("demo mode: OAuth Echo is accepted from the stand-in provider on \(DemoDefaults.providerHostAndPort) over http, and subscribers may be on loopback; never in production")
        }
        let app = try await EchoRelayServer.makeApplication(configuration, logger: logger)
        try await app.runService()  // SIGTERM and SIGINT shut down gracefully
    }
}
