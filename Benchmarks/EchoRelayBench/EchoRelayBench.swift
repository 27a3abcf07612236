import ArgumentParser
import AsyncHTTPClient
import EchoRelayCore
import Foundation
import Logging
import PostgresNIO
import Synchronization
import TestSupport  // LoopbackServer

@main
struct EchoRelayBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echorelay-bench",
        abstract: "Measures a release `echorelay serve` on PostgreSQL: ingest throughput, end-to-end latency and sustained rate, claim-and-complete, memory and storage.",
        discussion: """
            Stand-ins for the identity provider (it checks every OAuth signature) and for the \
            subscribers (they check every webhook signature) run in this process on loopback. \
            Each measurement gets a fresh database on the server --database-url names; its user \
            must be allowed to create databases. scripts/bench runs this after measuring \
            pgbench's ceiling on the same server, and passes that ceiling in for the ratios.
            """
    )

    @Option(help: "A PostgreSQL URL (postgres://user@host:port/db) whose user may create databases.")
    var databaseURL: String

    @Option(help: "The echorelay binary to measure: a release build.")
    var echorelay = ".build/release/echorelay"

    @Option(help: "Seconds per throughput measurement and per offered-rate step.")
    var seconds = 10

    @Option(help: "Concurrent connections for the ingest measurement, comma-separated.", transform: integers)
    var connections: [Int] = [1, 16, 64]

    @Option(help: "Offered rates (events/s) for the end-to-end steps, comma-separated; the steps stop at the first one whose backlog does not drain within 30 s.", transform: integers)
    var rates: [Int] = [100, 200, 300, 400, 600, 1000]

    @Option(help: "Ordered subscriptions every event is delivered to.")
    var subscriptions = 2

    @Option(help: "Deliveries in flight per subscription (ECHORELAY_SUBSCRIPTION_CONCURRENCY of the measured serve; its default of 8 protects small subscribers, and caps each subscription at 8 ÷ the round trip).")
    var subscriptionConcurrency = 32

    @Option(help: "Distinct users the events are spread over.")
    var users = 10_000

    @Option(help: "pgbench's ingest ceiling measured in this run, as clients:tps pairs (1:1900,16:4900).", transform: ceiling)
    var ceilingIngest: [Int: Double] = [:]

    @Option(help: "pgbench's batched claim ceiling measured in this run, as clients:items/s pairs.", transform: ceiling)
    var ceilingClaim: [Int: Double] = [:]

    @Option(help: "Log level of the measured serve (its log goes to a file beside the CSV).")
    var serveLogLevel = "info"

    @Option(help: "Measurements to run, comma-separated: ingest, claim, e2e (all by default; one alone is handy under a profiler).", transform: phases)
    var only: Set<String> = ["ingest", "claim", "e2e"]

    @Option(help: "Where to write the end-to-end steps as CSV, for the plot.")
    var csv = "bench-latency.csv"

    func run() async throws {
        var logger = Logger(label: "echorelay-bench")
        logger.logLevel = .error
        let tracker = Tracker()
        let subscriberSecrets = Mutex<[WebhookSecret]>([])
        // Stopping a server by cancellation logs an error in Hummingbird; what the stand-ins see
        // wrong (a bad signature, a duplicate) the tracker counts and the report shows.
        var standIns = Logger(label: "bench.standin")
        standIns.logLevel = .critical
        try await LoopbackServer.run(BenchProvider.router(), logger: standIns) { providerPort in
            try await LoopbackServer.run(
                BenchSubscriber.router(secrets: { subscriberSecrets.withLock { $0 } }, tracker: tracker), logger: standIns
            ) { subscriberPort in
                let ingestSecret = WebhookSecret.generate()
                let bench = Bench(
                    options: self, databases: Databases(adminURL: databaseURL, logger: logger), logger: logger,
                    logFolder: URL(fileURLWithPath: csv).deletingLastPathComponent().path,
                    providerURL: "http://127.0.0.1:\(providerPort)\(BenchProvider.path)", providerHost: "127.0.0.1:\(providerPort)",
                    subscriberPort: subscriberPort, ingestSecret: ingestSecret, secret: try WebhookSecret(ingestSecret),
                    adminToken: "bench-admin-" + OAuth1.randomNonce(), tracker: tracker
                )

                var report = Report(ceilingIngest: ceilingIngest, ceilingClaim: ceilingClaim, subscriptions: subscriptions)
                if only.contains("ingest") { try await bench.measureIngest(into: &report) }
                if only.contains("claim") { try await bench.measureClaim(into: &report) }
                if only.contains("e2e") {
                    try await bench.measureEndToEnd(into: &report) { secrets in subscriberSecrets.withLock { $0 = secrets } }
                }
                print(report.markdown(seconds: seconds, users: users))
                try report.csv.write(toFile: csv, atomically: true, encoding: .utf8)
            }
        }
    }
}

/// One run's fixed parts, and its three measurements.
struct Bench {
    let options: EchoRelayBench
    let databases: Databases
    let logger: Logger
    /// Where the measured serve processes write their logs.
    let logFolder: String
    let providerURL: String
    let providerHost: String
    let subscriberPort: Int
    let ingestSecret: String
    let secret: WebhookSecret
    let adminToken: String
    let tracker: Tracker

    /// A release serve with `role` on a fresh database `database`, configured for the stand-ins.
    func startServe(database: String, role: String) async throws -> ServeProcess {
        try await databases.recreate(database)
        return try await ServeProcess.start(binary: options.echorelay, environment: [
            "ECHORELAY_DATABASE_URL": try databases.url(of: database), "ECHORELAY_ROLE": role,
            "ECHORELAY_INGEST_SECRETS": ingestSecret, "ECHORELAY_ADMIN_TOKEN": adminToken,
            "ECHORELAY_CONSUMER_KEY": BenchProvider.consumerKey, "ECHORELAY_ECHO_ALLOWED_HOSTS": providerHost,
            "ECHORELAY_ECHO_ALLOW_HTTP": "1", "ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS": "1",
            "ECHORELAY_LOG_LEVEL": options.serveLogLevel,
            "ECHORELAY_SUBSCRIPTION_CONCURRENCY": String(options.subscriptionConcurrency),
        ], logPath: "\(logFolder)/bench-serve-\(role).log")
    }

    func generator(serverURL: String, client: HTTPClient) -> LoadGenerator {
        LoadGenerator(serverURL: serverURL, providerURL: providerURL, secret: secret, users: options.users, client: client)
    }

    /// Ingest alone: serve --role ingest, a closed loop at each connection count.
    func measureIngest(into report: inout Report) async throws {
        let seconds = options.seconds
        progress("ingest: durable HTTP ingest, serve --role ingest, \(seconds) s per point")
        let serve = try await startServe(database: "bench_ingest", role: "ingest")
        for (index, count) in options.connections.enumerated() {
            let client = LoadGenerator.client(connections: count)
            let generator = generator(serverURL: serve.url, client: client)
            if index == 0 { _ = await generator.closedLoop(run: "warm", connections: count, duration: .seconds(2)) }
            let cpuBefore = serve.cpuSeconds() ?? 0
            let (rate, failed) = await generator.closedLoop(run: "c\(count)", connections: count, duration: .seconds(seconds))
            let cpu = ((serve.cpuSeconds() ?? 0) - cpuBefore) / Double(seconds)
            try await client.shutdown()
            report.ingest.append(.init(connections: count, rate: rate, failed: failed, serveCPU: cpu))
            progress(String(format: "  %3d connections  %8.0f events/s  (%d failed, serve used %.2f cores)", count, rate, failed, cpu))
        }
        report.ingestPeakResident = serve.peakResidentBytes()
        try await serve.stop()
    }

    /// Claim-and-complete through the store, no HTTP.
    func measureClaim(into report: inout Report) async throws {
        progress("claim: claim-and-complete through PostgresEventStore, \(options.seconds) s")
        let claim = try await ClaimMeasurement(databases: databases, logger: logger)
            .run(claimers: 8, batch: 50, seconds: options.seconds, seeded: 300_000)
        report.claim = claim
        progress(String(format: "  8 claimers, batches of 50  %8.0f items/s", claim.rate) + (claim.ranDry ? " (ran dry: a lower bound)" : ""))
    }

    /// End to end: serve --role all, ordered subscriptions, rising offered rates; then the
    /// storage the run left behind.
    func measureEndToEnd(into report: inout Report, subscribed: ([WebhookSecret]) -> Void) async throws {
        let subscriptions = options.subscriptions
        progress("end to end: provider → serve → \(subscriptions) ordered subscriptions, \(options.seconds) s per rate")
        let serve = try await startServe(database: "bench_e2e", role: "all")
        subscribed(try await EndToEndMeasurement.subscribe(
            serverURL: serve.url, adminToken: adminToken, subscriberPort: subscriberPort, count: subscriptions
        ))
        let url = try databases.url(of: "bench_e2e")
        let sizeBefore = try await databases.withClient(url: url) {
            try await $0.integer("SELECT pg_database_size(current_database())", logger: logger)
        }
        let client = LoadGenerator.client(connections: 256)
        let measurement = EndToEndMeasurement(
            subscriptions: subscriptions, tracker: tracker, generator: generator(serverURL: serve.url, client: client)
        )
        for (index, rate) in options.rates.enumerated() {
            let step = try await measurement.step(index, rate: rate, duration: .seconds(options.seconds), run: "e\(index)")
            report.latency.append(step)
            progress(String(format: "  %5d/s offered  %7.0f/s delivered  p50 %7.1f  p99 %7.1f  p99.9 %7.1f  max %7.1f ms  backlog %d→%d",
                            rate, step.deliveredRate, step.p50, step.p99, step.p999, step.max, step.backlogMiddle, step.backlogEnd)
                     + (step.sustained(subscriptions: subscriptions) ? "" : "  not sustained"))
            if !step.drained { break }
        }
        try await client.shutdown()
        report.peakResident = serve.peakResidentBytes()
        report.badSignatures = tracker.counts.badSignatures
        try await serve.stop()

        report.storage = try await databases.withClient(url: url) { client in
            try await client.query("CHECKPOINT", logger: logger)
            let size = try await client.integer("SELECT pg_database_size(current_database())", logger: logger)
            let events = try await client.integer("SELECT count(*) FROM events", logger: logger)
            return (events: Int(events), bytes: Int(size - sizeBefore))
        }
    }
}

private func phases(_ text: String) throws -> Set<String> {
    let phases = Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    if let unknown = phases.subtracting(["ingest", "claim", "e2e"]).first {
        throw ValidationError("\(unknown) is not one of ingest, claim, e2e")
    }
    return phases
}

private func integers(_ text: String) throws -> [Int] {
    try text.split(separator: ",").map { part in
        guard let value = Int(part.trimmingCharacters(in: .whitespaces)), value > 0 else {
            throw ValidationError("\"\(part)\" is not a positive whole number")
        }
        return value
    }
}

private func ceiling(_ text: String) throws -> [Int: Double] {
    var result: [Int: Double] = [:]
    for pair in text.split(separator: ",") {
        let parts = pair.split(separator: ":")
        guard parts.count == 2, let clients = Int(parts[0]), let rate = Double(parts[1]) else {
            throw ValidationError("\"\(pair)\" is not clients:rate")
        }
        result[clients] = rate
    }
    return result
}

/// A progress line, on standard error; the table goes to standard output.
private func progress(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
