import ArgumentParser
import EchoRelayCore
import EchoRelayServer
import Hummingbird
import Logging
import NIOCore
import NIOPosix

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

    @Option(name: .customLong(ServeSettings.host.flag), help: ServeSettings.host.argumentHelp)
    var host: String?

    @Option(name: .customLong(ServeSettings.port.flag), help: ServeSettings.port.argumentHelp)
    var port: Int?

    @Option(name: .customLong(ServeSettings.databaseURL.flag), help: ServeSettings.databaseURL.argumentHelp)
    var databaseURL: String?

    @Option(name: .customLong(ServeSettings.ingestSecrets.flag), help: ServeSettings.ingestSecrets.argumentHelp)
    var ingestSecrets: String?

    @Option(name: .customLong(ServeSettings.adminToken.flag), help: ServeSettings.adminToken.argumentHelp)
    var adminToken: String?

    @Option(name: .customLong(ServeSettings.secretKey.flag), help: ServeSettings.secretKey.argumentHelp)
    var secretKey: String?

    @Option(name: .customLong(ServeSettings.role.flag), help: ServeSettings.role.argumentHelp)
    var role: String?

    @Option(name: .customLong(ServeSettings.durability.flag), help: ServeSettings.durability.argumentHelp)
    var durability: String?

    @Option(name: .customLong(ServeSettings.authFailureLimit.flag), help: ServeSettings.authFailureLimit.argumentHelp)
    var authFailureLimit: Int?

    @Option(name: .customLong(ServeSettings.trustedProxies.flag), help: ServeSettings.trustedProxies.argumentHelp)
    var trustedProxies: String?

    @Option(name: .customLong(ServeSettings.maxSubscriptionsPerApp.flag), help: ServeSettings.maxSubscriptionsPerApp.argumentHelp)
    var maxSubscriptionsPerApp: Int?

    @Option(name: .customLong(ServeSettings.metricsToken.flag), help: ServeSettings.metricsToken.argumentHelp)
    var metricsToken: String?

    @Option(name: .customLong(ServeSettings.consumerKey.flag), help: ServeSettings.consumerKey.argumentHelp)
    var consumerKey: String?

    @Option(name: .customLong(ServeSettings.echoAllowedHosts.flag), help: ServeSettings.echoAllowedHosts.argumentHelp)
    var echoAllowedHosts: String?

    @Flag(name: .customLong(ServeSettings.echoAllowHTTP.flag), help: ServeSettings.echoAllowHTTP.argumentHelp)
    var echoAllowHTTP = false

    @Option(name: .customLong(ServeSettings.echoTimeout.flag), help: ServeSettings.echoTimeout.argumentHelp)
    var echoTimeout: String?

    @Option(name: .customLong(ServeSettings.echoRetrySchedule.flag), help: ServeSettings.echoRetrySchedule.argumentHelp)
    var echoRetrySchedule: String?

    @Option(name: .customLong(ServeSettings.oauth2IntrospectionURL.flag), help: ServeSettings.oauth2IntrospectionURL.argumentHelp)
    var oauth2IntrospectionURL: String?

    @Option(name: .customLong(ServeSettings.oauth2ClientID.flag), help: ServeSettings.oauth2ClientID.argumentHelp)
    var oauth2ClientID: String?

    @Option(name: .customLong(ServeSettings.oauth2ClientSecret.flag), help: ServeSettings.oauth2ClientSecret.argumentHelp)
    var oauth2ClientSecret: String?

    @Option(name: .customLong(ServeSettings.oauth2UserInfoURL.flag), help: ServeSettings.oauth2UserInfoURL.argumentHelp)
    var oauth2UserInfoURL: String?

    @Option(name: .customLong(ServeSettings.oauth2TokenClientID.flag), help: ServeSettings.oauth2TokenClientID.argumentHelp)
    var oauth2TokenClientID: String?

    @Option(name: .customLong(ServeSettings.oauth2Issuer.flag), help: ServeSettings.oauth2Issuer.argumentHelp)
    var oauth2Issuer: String?

    @Flag(name: .customLong(ServeSettings.oauth2AllowHTTP.flag), help: ServeSettings.oauth2AllowHTTP.argumentHelp)
    var oauth2AllowHTTP = false

    @Option(name: .customLong(ServeSettings.lease.flag), help: ServeSettings.lease.argumentHelp)
    var lease: String?

    @Option(name: .customLong(ServeSettings.verifyConcurrency.flag), help: ServeSettings.verifyConcurrency.argumentHelp)
    var verifyConcurrency: Int?

    @Option(name: .customLong(ServeSettings.deliveryTimeout.flag), help: ServeSettings.deliveryTimeout.argumentHelp)
    var deliveryTimeout: String?

    @Option(name: .customLong(ServeSettings.deliveryConnectTimeout.flag), help: ServeSettings.deliveryConnectTimeout.argumentHelp)
    var deliveryConnectTimeout: String?

    @Option(name: .customLong(ServeSettings.retrySchedule.flag), help: ServeSettings.retrySchedule.argumentHelp)
    var retrySchedule: String?

    @Option(name: .customLong(ServeSettings.disableAfter.flag), help: ServeSettings.disableAfter.argumentHelp)
    var disableAfter: String?

    @Flag(name: .customLong(ServeSettings.allowPrivateSubscribers.flag), help: ServeSettings.allowPrivateSubscribers.argumentHelp)
    var allowPrivateSubscribers = false

    @Option(name: .customLong(ServeSettings.privateSubscribers.flag), help: ServeSettings.privateSubscribers.argumentHelp)
    var privateSubscribers: String?

    @Option(name: .customLong(ServeSettings.subscriberCAFile.flag), help: ServeSettings.subscriberCAFile.argumentHelp)
    var subscriberCAFile: String?

    @Option(name: .customLong(ServeSettings.deliveryConcurrency.flag), help: ServeSettings.deliveryConcurrency.argumentHelp)
    var deliveryConcurrency: Int?

    @Option(name: .customLong(ServeSettings.subscriptionConcurrency.flag), help: ServeSettings.subscriptionConcurrency.argumentHelp)
    var subscriptionConcurrency: Int?

    @Option(name: .customLong(ServeSettings.requestTimeout.flag), help: ServeSettings.requestTimeout.argumentHelp)
    var requestTimeout: String?

    @Option(name: .customLong(ServeSettings.shutdownGrace.flag), help: ServeSettings.shutdownGrace.argumentHelp)
    var shutdownGrace: String?

    @Option(name: .customLong(ServeSettings.replayRate.flag), help: ServeSettings.replayRate.argumentHelp)
    var replayRate: Int?

    @OptionGroup var retention: RetentionOptions

    @Option(name: .customLong(ServeSettings.pruneInterval.flag), help: ServeSettings.pruneInterval.argumentHelp)
    var pruneInterval: String?

    @Option(name: .customLong(ServeSettings.backlogLimit.flag), help: ServeSettings.backlogLimit.argumentHelp)
    var backlogLimit: String?

    @Option(name: .customLong(ServeSettings.setIssuer.flag), help: ServeSettings.setIssuer.argumentHelp)
    var setIssuer: String?

    @Option(name: .customLong(ServeSettings.setAudience.flag), help: ServeSettings.setAudience.argumentHelp)
    var setAudience: String?

    @Option(name: .customLong(ServeSettings.setJwksURL.flag), help: ServeSettings.setJwksURL.argumentHelp)
    var setJwksURL: String?

    @Flag(name: .customLong(ServeSettings.setAllowHTTP.flag), help: ServeSettings.setAllowHTTP.argumentHelp)
    var setAllowHTTP = false

    @Option(name: .customLong(ServeSettings.setPushToken.flag), help: ServeSettings.setPushToken.argumentHelp)
    var setPushToken: String?

    @OptionGroup var setPolling: SetPollingOptions

    @Flag(name: .customLong(ServeSettings.demo.flag), help: ServeSettings.demo.argumentHelp)
    var demo = false

    @Flag(name: .customLong(ServeSettings.noMigrate.flag), help: ServeSettings.noMigrate.argumentHelp)
    var noMigrate = false

    @Option(name: .customLong(ServeSettings.threads.flag), help: ServeSettings.threads.argumentHelp)
    var threads: Int?

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        do {
            try await serve()
        } catch let error as ConfigurationError {
            throw ServeSettings.naming(error)
        }
    }

    func serve() async throws {
        // First, before anything starts the event loops: the count is read when they start.
        if let threads = try Setting.threads(threads) { NIOSingletons.groupLoopCountSuggestion = threads }
        // Then the tasks run on those event loops too, instead of on Swift's own pool: a
        // delivery's hops (database answer, webhook, record) no longer wake a thread of the
        // other kind each time, and a task stays on the loop that started it. In the claim part
        // of scripts/bench the worker finished 3,174–3,513 deliveries a second against
        // 2,818–3,181 on the pool (three ABAB pairs; BENCHMARKS.md, run Q).
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        let logger = try logging.bootstrap(label: "echorelay")
        var configuration = try serverConfiguration()
        configuration.commandName = CommandName.current()
        if Setting.isOn(demo, ServeSettings.demo) {
            configuration.enableDemo()
            logger.warning("demo mode: OAuth Echo and OAuth 2 are accepted from the stand-in provider on \(DemoDefaults.providerHostAndPort) over http, and subscribers may be on loopback; never in production")
        }
        let app = try await EchoRelayServer.makeApplication(configuration, logger: logger)
        do {
            try await app.runService()  // SIGTERM and SIGINT shut down gracefully
        } catch {
            // Taken between the check at start and the bind: said as the check says it.
            throw EchoRelayServer.listenRefusal(error, host: configuration.host, port: configuration.port) ?? error
        }
    }

    /// Every setting from its flag, else its environment variable, else its default
    /// (`ServeSettings`), checked.
    func serverConfiguration() throws -> ServerConfiguration {
        typealias S = ServeSettings
        var configuration = ServerConfiguration(
            host: try Setting.required(S.host, host),
            port: try Setting.integer(port, S.port, in: 1...65_535),
            databaseURL: Setting.text(databaseURL, S.databaseURL).map(Secret.init),
            ingestSecrets: Setting.list(ingestSecrets, S.ingestSecrets).map(Secret.init),
            adminToken: Setting.text(adminToken, S.adminToken).map(Secret.init),
            secretKey: Setting.text(secretKey, S.secretKey).map(Secret.init),
            migrateAtStart: !Setting.isOn(noMigrate, S.noMigrate),
            role: try Setting.role(role),
            echo: EchoConfiguration(
                consumerKey: Setting.text(consumerKey, S.consumerKey) ?? "",
                allowedHosts: Setting.list(echoAllowedHosts, S.echoAllowedHosts),
                allowHTTP: Setting.isOn(echoAllowHTTP, S.echoAllowHTTP),
                timeout: try Setting.duration(echoTimeout, S.echoTimeout),
                retrySchedule: try Setting.durations(echoRetrySchedule, S.echoRetrySchedule),
                lease: try Setting.duration(lease, S.lease),
                concurrency: try Setting.integer(verifyConcurrency, S.verifyConcurrency, in: 1...4_096)
            ),
            delivery: DeliveryConfiguration(
                timeout: try Setting.duration(deliveryTimeout, S.deliveryTimeout),
                connectTimeout: try Setting.optionalDuration(deliveryConnectTimeout, S.deliveryConnectTimeout),
                retrySchedule: try Setting.durations(retrySchedule, S.retrySchedule),
                disableAfter: try Setting.duration(disableAfter, S.disableAfter),
                allowPrivateSubscribers: Setting.isOn(allowPrivateSubscribers, S.allowPrivateSubscribers),
                privateSubscribers: try Setting.privateSubscribers(privateSubscribers),
                subscriberCAFile: Setting.text(subscriberCAFile, S.subscriberCAFile),
                concurrency: try Setting.integer(deliveryConcurrency, S.deliveryConcurrency, in: 1...4_096),
                perSubscriptionConcurrency: try Setting.integer(subscriptionConcurrency, S.subscriptionConcurrency, in: 1...4_096),
                replayRate: try Setting.integer(replayRate, S.replayRate, in: 1...100_000)
            ),
            requestTimeout: try Setting.duration(requestTimeout, S.requestTimeout),
            shutdownGrace: try Setting.duration(shutdownGrace, S.shutdownGrace),
            backlogLimit: try Setting.backlogLimit(backlogLimit),
            retention: try retention.policy(),
            pruneInterval: try Setting.duration(pruneInterval, S.pruneInterval),
            securityEvents: try Setting.securityEvents(
                issuer: setIssuer, audience: setAudience, jwksURL: setJwksURL, allowHTTP: setAllowHTTP, pushToken: setPushToken,
                polling: setPolling
            ),
            oauth2: try Setting.oauth2(
                introspectionURL: oauth2IntrospectionURL, clientID: oauth2ClientID, clientSecret: oauth2ClientSecret,
                userInfoURL: oauth2UserInfoURL, tokenClientID: oauth2TokenClientID, issuer: oauth2Issuer, allowHTTP: oauth2AllowHTTP
            )
        )
        configuration.durability = try Setting.durability(durability)
        configuration.authenticationFailureLimit = try Setting.integer(authFailureLimit, S.authFailureLimit, in: 1...100_000)
        configuration.trustedProxies = try Setting.trustedProxies(trustedProxies)
        configuration.maxSubscriptionsPerApp = try Setting.integer(maxSubscriptionsPerApp, S.maxSubscriptionsPerApp, in: 1...100_000)
        configuration.metricsToken = Setting.text(metricsToken, S.metricsToken).map(Secret.init)
        return configuration
    }
}
