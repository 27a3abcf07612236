import ArgumentParser
import EchoRelayServer

/// One setting of `serve`: its flag, its environment variable, what it is when neither is
/// given, and its help. `ServeSettings` is the table of them all; `serve --help` and its
/// options are made from it, and `ServeSettingsTests` holds the README's configuration table
/// to it.
struct ServeSetting: Sendable {
    enum Default: Sendable {
        /// Read as if it had been given: the one text both the help and the reader use.
        case value(String)
        /// No value; what that means, as the README's table says it (markdown).
        case unset(String)
        /// An on/off switch, off unless the flag is given or the variable is `1`.
        case `switch`
    }

    let flag: String
    let variable: String
    let `default`: Default
    let help: String

    init(_ flag: String, _ variable: String, _ default: Default, help: String) {
        self.flag = flag
        self.variable = variable
        self.default = `default`
        self.help = help
    }

    /// The help line: the text, then where else the setting comes from and its default.
    var argumentHelp: ArgumentHelp {
        switch self.default {
        case .value(let text): "\(help) (env: \(variable), default: \(text))"
        case .unset(let meaning): "\(help) (env: \(variable), default: \(Self.plain(meaning)))"
        case .switch: "\(help) (env: \(variable)=1)"
        }
    }

    /// The README's markdown, as plain text: no backticks, no parentheses around the whole.
    private static func plain(_ markdown: String) -> String {
        let text = markdown.filter { $0 != "`" }
        return text.hasPrefix("(") && text.hasSuffix(")") ? String(text.dropFirst().dropLast()) : text
    }

    var defaultValue: String? {
        if case .value(let text) = self.default { return text }
        return nil
    }
}

/// Every setting of `serve`, in the order of the README's configuration table.
enum ServeSettings {
    static let host = ServeSetting("host", "ECHORELAY_HOST", .value("127.0.0.1"),
        help: "Address to listen on.")
    static let port = ServeSetting("port", "ECHORELAY_PORT", .value("8080"),
        help: "Port to listen on.")
    static let databaseURL = ServeSetting("database-url", "ECHORELAY_DATABASE_URL", .unset("`sqlite:echorelay.sqlite`"),
        help: "Where the data lives: a PostgreSQL URL, postgres://user:password@host:5432/database[?sslmode=disable|prefer|require], for production and several processes; or sqlite:PATH, an embedded file for one process.")
    static let demo = ServeSetting("demo", "ECHORELAY_DEMO", .switch,
        help: "Try EchoRelay on this machine with `echorelay demo`: accept OAuth Echo over plain http from the demo's stand-in identity provider on 127.0.0.1:8181 (consumer key echorelay-demo, unless ECHORELAY_CONSUMER_KEY is set), re-verify OAuth 2 events with its introspection and UserInfo endpoints (unless ECHORELAY_OAUTH2_INTROSPECTION_URL is set), and deliver to subscribers on loopback. For trying it out only, never in production.")
    static let ingestSecrets = ServeSetting("ingest-secrets", "ECHORELAY_INGEST_SECRETS", .unset("(required on PostgreSQL; made on the embedded store's first run)"),
        help: "Comma-separated whsec_ secrets the identity provider signs events with; any one of them is accepted, for rotation. Each key must be 16 bytes (128 bits) or more: make one with `echorelay secret`.")
    static let secretKey = ServeSetting("secret-key", "ECHORELAY_SECRET_KEY", .unset("none (plaintext, with a warning)"),
        help: "Comma-separated base64 AES-256 keys that encrypt subscription secrets in the database; the first seals, every one opens (rotation: <new>,<old>, then `echorelay reseal`). Make one with `echorelay secret-key`.")
    static let adminToken = ServeSetting("admin-token", "ECHORELAY_ADMIN_TOKEN", .unset("none"),
        help: "Bearer token with the admin role, 128 bits or stronger (make one with `echorelay secret`); on the embedded store's first run without one, an admin token is made and printed once. Replacing it ends the console sessions it opened.")
    static let noMigrate = ServeSetting("no-migrate", "ECHORELAY_NO_MIGRATE", .switch,
        help: "Do not apply pending database migrations at start-up (run `echorelay migrate` yourself).")
    static let role = ServeSetting("role", "ECHORELAY_ROLE", .value("all"),
        help: "What this process runs: all (the API and the workers), ingest (the API only) or workers (the workers, and health checks).")
    static let durability = ServeSetting("durability", "ECHORELAY_DURABILITY", .value("local"),
        help: "What a 202 (and any change acknowledged through the API) waits for: local, the commit on the PostgreSQL primary; or standby, the commit flushed by at least one of the primary's standbys as well, else 503 with Retry-After (the database role needs pg_monitor; PostgreSQL only).")
    static let authFailureLimit = ServeSetting("auth-failure-limit", "ECHORELAY_AUTH_FAILURE_LIMIT", .value("20"),
        help: "Failed authentications (bearer tokens, console sign-ins) a client address may make in a minute; past it, that address is answered 429 with Retry-After until the minute is over.")
    static let trustedProxies = ServeSetting("trusted-proxies", "ECHORELAY_TRUSTED_PROXIES", .unset("none"),
        help: "Comma-separated addresses and CIDR ranges of the proxies in front of EchoRelay: a request from one of them is counted against the right-most address in X-Forwarded-For that is not itself a trusted proxy.")
    static let maxSubscriptionsPerApp = ServeSetting("max-subscriptions-per-app", "ECHORELAY_MAX_SUBSCRIPTIONS_PER_APP", .value("50"),
        help: "How many subscriptions (deleted ones not counted) one app token may have; past it, POST /v1/subscriptions answers 422 naming the limit. Admins are not limited.")
    static let metricsToken = ServeSetting("metrics-token", "ECHORELAY_METRICS_TOKEN", .unset("none (GET /metrics is open)"),
        help: "When set, GET /metrics answers only a scrape with Authorization: Bearer <it> (401 otherwise); 128 bits or stronger (make one with `echorelay secret`).")
    static let consumerKey = ServeSetting("consumer-key", "ECHORELAY_CONSUMER_KEY", .unset("(required, unless only OAuth 2 is used)"),
        help: "The app's OAuth consumer key; every echo header must carry it. With ECHORELAY_OAUTH2_INTROSPECTION_URL set and this unset, events must carry oauth2, not echo.")
    static let echoAllowedHosts = ServeSetting("echo-allowed-hosts", "ECHORELAY_ECHO_ALLOWED_HOSTS", .unset("(required with `ECHORELAY_CONSUMER_KEY`)"),
        help: "Comma-separated hosts EchoRelay may send OAuth Echo requests to: `host` (the scheme's default port) or `host:port`.")
    static let echoAllowHTTP = ServeSetting("echo-allow-http", "ECHORELAY_ECHO_ALLOW_HTTP", .switch,
        help: "Allow plain-http OAuth Echo providers; for local testing only.")
    static let echoTimeout = ServeSetting("echo-timeout", "ECHORELAY_ECHO_TIMEOUT", .value("5s"),
        help: "Time limit of one OAuth Echo request, such as 5s or 500ms.")
    static let echoRetrySchedule = ServeSetting("echo-retry-schedule", "ECHORELAY_ECHO_RETRY_SCHEDULE", .value("1s,5s,15s,30s,60s,120s"),
        help: "Comma-separated delays between echo tries; N delays mean N retries. Keep the sum inside the provider's 5-minute timestamp window.")
    static let oauth2IntrospectionURL = ServeSetting("oauth2-introspection-url", "ECHORELAY_OAUTH2_INTROSPECTION_URL", .unset("none (events must carry `echo`)"),
        help: "The OAuth 2 authorization server's token introspection endpoint (RFC 7662), which confirms the access token an event carries as oauth2; with --oauth2-client-id and --oauth2-client-secret, turns OAuth 2 re-verification on.")
    static let oauth2ClientID = ServeSetting("oauth2-client-id", "ECHORELAY_OAUTH2_CLIENT_ID", .unset("none"),
        help: "EchoRelay's own client id at the authorization server, sent with the secret as HTTP Basic (client_secret_basic) to the introspection endpoint.")
    static let oauth2ClientSecret = ServeSetting("oauth2-client-secret", "ECHORELAY_OAUTH2_CLIENT_SECRET", .unset("none"),
        help: "EchoRelay's own client secret at the authorization server; never logged. Prefer the environment: flags are visible in the process list.")
    static let oauth2UserInfoURL = ServeSetting("oauth2-userinfo-url", "ECHORELAY_OAUTH2_USERINFO_URL", .unset("none (`phone.changed` over OAuth 2 is refused)"),
        help: "The OpenID Connect UserInfo endpoint, asked with the user's token for the verified phone number; required to verify phone.changed over OAuth 2.")
    static let oauth2TokenClientID = ServeSetting("oauth2-token-client-id", "ECHORELAY_OAUTH2_TOKEN_CLIENT_ID", .unset("`ECHORELAY_OAUTH2_CLIENT_ID`"),
        help: "The client the users' tokens must have been issued to (the introspection answer's client_id), the app's own client; another client's token is rejected (wrong_client).")
    static let oauth2Issuer = ServeSetting("oauth2-issuer", "ECHORELAY_OAUTH2_ISSUER", .unset("none (any issuer)"),
        help: "When set, an introspection answer's iss must equal it, or the event is rejected (wrong_issuer).")
    static let oauth2AllowHTTP = ServeSetting("oauth2-allow-http", "ECHORELAY_OAUTH2_ALLOW_HTTP", .switch,
        help: "Allow plain-http OAuth 2 endpoints, which send the client secret and users' tokens in the clear; for local testing only.")
    static let lease = ServeSetting("lease", "ECHORELAY_LEASE", .value("60s"),
        help: "How long a worker holds a claimed item before another process may take it; longer than the echo timeout.")
    static let verifyConcurrency = ServeSetting("verify-concurrency", "ECHORELAY_VERIFY_CONCURRENCY", .value("32"),
        help: "OAuth Echo requests in flight at once per process.")
    static let deliveryTimeout = ServeSetting("delivery-timeout", "ECHORELAY_DELIVERY_TIMEOUT", .value("15s"),
        help: "Time limit of one webhook delivery, connecting and the answer included.")
    static let deliveryConnectTimeout = ServeSetting("delivery-connect-timeout", "ECHORELAY_DELIVERY_CONNECT_TIMEOUT", .unset("`3s`, or the delivery timeout if shorter"),
        help: "How long a webhook may take to connect to its subscriber, within the delivery timeout; past it the attempt fails as connect_timeout. Nothing listening fails at once, as connection_refused.")
    static let retrySchedule = ServeSetting("retry-schedule", "ECHORELAY_RETRY_SCHEDULE", .value("5s,5m,30m,2h,5h,10h,10h"),
        help: "Comma-separated delays between delivery tries, each with ±10% jitter; N delays mean N retries, then the delivery is dead.")
    static let disableAfter = ServeSetting("disable-after", "ECHORELAY_DISABLE_AFTER", .value("5d"),
        help: "Disable a subscription whose deliveries have all failed for this long.")
    static let allowPrivateSubscribers = ServeSetting("allow-private-subscribers", "ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS", .switch,
        help: "Allow subscriber URLs on loopback and private addresses, and plain http; for local testing only.")
    static let privateSubscribers = ServeSetting("private-subscribers", "ECHORELAY_PRIVATE_SUBSCRIBERS", .unset("none"),
        help: "Comma-separated private hosts, IP addresses and CIDR ranges that may receive deliveries over https, such as an internal service network (hooks.internal,10.20.0.0/16); every other private address stays refused.")
    static let subscriberCAFile = ServeSetting("subscriber-ca-file", "ECHORELAY_SUBSCRIBER_CA_FILE", .unset("none"),
        help: "A PEM file of certificate authorities trusted for subscribers' https besides the system's, such as an internal network's CA.")
    static let deliveryConcurrency = ServeSetting("delivery-concurrency", "ECHORELAY_DELIVERY_CONCURRENCY", .value("64"),
        help: "Webhook deliveries in flight at once per process.")
    static let subscriptionConcurrency = ServeSetting("subscription-concurrency", "ECHORELAY_SUBSCRIPTION_CONCURRENCY", .value("16"),
        help: "Webhook deliveries in flight at once per subscription in each process, so one slow backend cannot take every slot; a subscription gets at most this many ÷ its round trip a second.")
    static let replayRate = ServeSetting("replay-rate", "ECHORELAY_REPLAY_RATE", .value("50"),
        help: "Events a bulk replay sends per second (each event to each subscription counts once), so a replay cannot flood a backend.")
    static let retainAttempts = ServeSetting("retain-attempts", "ECHORELAY_RETAIN_ATTEMPTS", .value("30d"),
        help: "How long delivery attempt records (with the heads of the answers) and test deliveries are kept once everything about their event is final; 0 keeps them forever.")
    static let retainEvents = ServeSetting("retain-events", "ECHORELAY_RETAIN_EVENTS", .value("90d"),
        help: "How long an event's deliveries, their attempts and its pushed payload are kept once everything about it is final; then the event keeps only its receipt (id, fingerprint, user, sequence, type, outcome and times), so a repeated push still gets its answer. 0 keeps them forever.")
    static let pruneInterval = ServeSetting("prune-interval", "ECHORELAY_PRUNE_INTERVAL", .value("1m"),
        help: "How often a worker process prunes what retention no longer keeps, in small batches.")
    static let backlogLimit = ServeSetting("backlog-limit", "ECHORELAY_BACKLOG_LIMIT", .value("2000"),
        help: "Events received and not yet final (awaiting verification, or a delivery to an enabled subscription that is not down: one whose attempts have all failed for 10 s does not count) past which ingest answers 503 with Retry-After and stores nothing, until the backlog drains below it; `off` for no limit.")
    static let setIssuer = ServeSetting("set-issuer", "ECHORELAY_SET_ISSUER", .unset("none (`POST /v1/sets` is off)"),
        help: "The Shared Signals transmitter's exact issuer (iss) whose Security Event Tokens EchoRelay accepts, pushed to POST /v1/sets or polled; with --set-audience, turns Shared Signals on. Its /.well-known/ssf-configuration gives the keys' URL and the stream endpoints.")
    static let setAudience = ServeSetting("set-audience", "ECHORELAY_SET_AUDIENCE", .unset("none"),
        help: "EchoRelay's audience (aud) in the transmitter's SETs.")
    static let setJwksURL = ServeSetting("set-jwks-url", "ECHORELAY_SET_JWKS_URL", .unset("the `jwks_uri` of the transmitter's metadata"),
        help: "The https URL of the transmitter's JWKS, whose keys sign its SETs.")
    static let setAllowHTTP = ServeSetting("set-allow-http", "ECHORELAY_SET_ALLOW_HTTP", .switch,
        help: "Allow plain-http transmitter URLs (metadata, JWKS, poll, stream endpoints); for local testing only.")
    static let setTransmitterToken = ServeSetting("set-transmitter-token", "ECHORELAY_SET_TRANSMITTER_TOKEN", .unset("none"),
        help: "The bearer token of the transmitter's stream endpoints (echorelay sets stream), and of polling unless --set-poll-token is given.")
    static let setPollURL = ServeSetting("set-poll-url", "ECHORELAY_SET_POLL_URL", .unset("the endpoint of the poll stream `echorelay sets stream create --delivery poll` registered, if any"),
        help: "The transmitter's RFC 8936 poll endpoint: EchoRelay polls it for SETs.")
    static let setPollToken = ServeSetting("set-poll-token", "ECHORELAY_SET_POLL_TOKEN", .unset("ECHORELAY_SET_TRANSMITTER_TOKEN"),
        help: "The bearer token of each poll.")
    static let setPollWait = ServeSetting("set-poll-wait", "ECHORELAY_SET_POLL_WAIT", .value("60s"),
        help: "How long one long poll may be held open by the transmitter before EchoRelay polls again.")
    static let setPollMaxEvents = ServeSetting("set-poll-max-events", "ECHORELAY_SET_POLL_MAX_EVENTS", .value("50"),
        help: "The most SETs one poll asks for (maxEvents), 1 to 1000.")
    static let setPushToken = ServeSetting("set-push-token", "ECHORELAY_SET_PUSH_TOKEN", .unset("none"),
        help: "A token the transmitter must send as Authorization: Bearer with every SET, at least 16 characters and 128 bits strong (make one with `echorelay secret`); unset, none is asked for.")
    static let requestTimeout = ServeSetting("request-timeout", "ECHORELAY_REQUEST_TIMEOUT", .value("30s"),
        help: "How long a client may take to send a request body, or be slow sending a request head or idle on a connection, before the connection is closed (slowloris and endless bodies cannot hold it).")
    static let shutdownGrace = ServeSetting("shutdown-grace", "ECHORELAY_SHUTDOWN_GRACE", .value("10s"),
        help: "At SIGTERM, how long in-flight echo requests and deliveries may take to finish before they are cancelled and handed back to the database for another process.")
    static let threads = ServeSetting("threads", "ECHORELAY_THREADS", .unset("one a core"),
        help: "Threads for the network, the database connections and all of serve's work (the event loops, which run its tasks too). Where serve shares a machine's cores with PostgreSQL, fewer threads than cores leave the database its share and save thread switches: on 2 cores, 1 for an ingest-role process (one that also verifies needs its threads for that).")
    static let logLevel = ServeSetting("log-level", "ECHORELAY_LOG_LEVEL", .value("info"),
        help: "Log level: trace, debug, info, notice, warning, error, critical.")
    static let logFormat = ServeSetting("log-format", "ECHORELAY_LOG_FORMAT", .value("text"),
        help: "Log format on standard error: text, or json (one object per line, with event.id, user.id and subscription.id as keys).")

    /// The error with its setting named both ways, `ECHORELAY_PORT (--port)`, so it can be
    /// fixed where it was given.
    static func naming(_ error: ConfigurationError) -> ConfigurationError {
        guard let setting = all.first(where: { $0.variable == error.setting }) else { return error }
        return ConfigurationError(setting: "\(setting.variable) (--\(setting.flag))", reason: error.reason)
    }

    static let all: [ServeSetting] = [
        host, port, databaseURL, demo, ingestSecrets, secretKey, adminToken, noMigrate, role, durability, authFailureLimit, trustedProxies, maxSubscriptionsPerApp, metricsToken, consumerKey, echoAllowedHosts, echoAllowHTTP, echoTimeout, echoRetrySchedule,
        oauth2IntrospectionURL, oauth2ClientID, oauth2ClientSecret, oauth2UserInfoURL, oauth2TokenClientID, oauth2Issuer, oauth2AllowHTTP,
        lease, verifyConcurrency, deliveryTimeout, deliveryConnectTimeout, retrySchedule, disableAfter, allowPrivateSubscribers, privateSubscribers, subscriberCAFile, deliveryConcurrency, subscriptionConcurrency, replayRate, retainAttempts, retainEvents, pruneInterval, backlogLimit, setIssuer, setAudience, setJwksURL, setAllowHTTP, setPushToken, setTransmitterToken, setPollURL, setPollToken, setPollWait, setPollMaxEvents, requestTimeout, shutdownGrace, threads, logLevel, logFormat,
    ]
}
