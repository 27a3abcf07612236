import ArgumentParser
import AsyncHTTPClient
import EchoRelayCore
import Foundation
import Logging
import PostgresNIO
import Synchronization

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

    @Option(help: "Measurements to run, comma-separated: ingest, claim, e2e (all by default; one alone is handy under a profiler).")
    var only = "ingest,claim,e2e"

    @Option(help: "Where to write the end-to-end steps as CSV, for the plot.")
    var csv = "bench-latency.csv"

    mutating func run() async throws {
        var logger = Logger(label: "echorelay-bench")
        logger.logLevel = .error
        let databases = Databases(adminURL: databaseURL, logger: logger)
        let logFolder = URL(fileURLWithPath: csv).deletingLastPathComponent().path
        var report = Report(ceilingIngest: ceilingIngest, ceilingClaim: ceilingClaim, subscriptions: subscriptions)

        let tracker = Tracker()
        let providerPort = Mutex(0)
        let provider = try await LoopbackServer.start(BenchProvider.router(port: { providerPort.withLock { $0 } }))
        providerPort.withLock { $0 = provider.port }
        let subscriberSecrets = Mutex<[WebhookSecret]>([])
        let subscriber = try await LoopbackServer.start(
            BenchSubscriber.router(secrets: { subscriberSecrets.withLock { $0 } }, tracker: tracker)
        )
        defer {
            provider.stop()
            subscriber.stop()
        }
        let providerURL = "http://127.0.0.1:\(provider.port)\(BenchProvider.path)"
        let ingestSecret = WebhookSecret.generate()
        let adminToken = "bench-admin-" + OAuth1.randomNonce()
        func environment(database: String, role: String) throws -> [String: String] {
            [
                "ECHORELAY_DATABASE_URL": try databases.url(of: database), "ECHORELAY_ROLE": role,
                "ECHORELAY_INGEST_SECRETS": ingestSecret, "ECHORELAY_ADMIN_TOKEN": adminToken,
                "ECHORELAY_CONSUMER_KEY": BenchProvider.consumerKey, "ECHORELAY_ECHO_ALLOWED_HOSTS": "127.0.0.1:\(provider.port)",
                "ECHORELAY_ECHO_ALLOW_HTTP": "1", "ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS": "1", "ECHORELAY_LOG_LEVEL": serveLogLevel,
                "ECHORELAY_SUBSCRIPTION_CONCURRENCY": String(subscriptionConcurrency),
            ]
        }
        let secret = try WebhookSecret(ingestSecret)

        let phases = Set(only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        if let unknown = phases.subtracting(["ingest", "claim", "e2e"]).first {
            throw ValidationError("--only: \(unknown) is not one of ingest, claim, e2e")
        }

        // 1. Ingest alone: serve --role ingest, closed loop at each connection count.
        if phases.contains("ingest") {
        progress("ingest: durable HTTP ingest, serve --role ingest, \(seconds) s per point")
        try await databases.recreate("bench_ingest")
        let ingestServe = try await ServeProcess.start(
            binary: echorelay, environment: try environment(database: "bench_ingest", role: "ingest"),
            logPath: logFolder + "/bench-serve-ingest.log"
        )
        for (index, count) in connections.enumerated() {
            let client = LoadGenerator.client(connections: count)
            let generator = LoadGenerator(serverURL: ingestServe.url, providerURL: providerURL, secret: secret, users: users, client: client)
            if index == 0 { _ = await generator.closedLoop(run: "warm", connections: count, duration: .seconds(2)) }
            let cpuBefore = ingestServe.cpuSeconds() ?? 0
            let (rate, failed) = await generator.closedLoop(run: "c\(count)", connections: count, duration: .seconds(seconds))
            let cpu = ((ingestServe.cpuSeconds() ?? 0) - cpuBefore) / Double(seconds)
            try await client.shutdown()
            report.ingest.append(.init(connections: count, rate: rate, failed: failed, serveCPU: cpu))
            progress(String(format: "  %3d connections  %8.0f events/s  (%d failed, serve used %.2f cores)", count, rate, failed, cpu))
        }
        report.ingestPeakResident = ingestServe.peakResidentBytes()
        try await ingestServe.stop()
        }

        // 2. Claim-and-complete through the store, no HTTP.
        if phases.contains("claim") {
        progress("claim: claim-and-complete through PostgresEventStore, \(seconds) s")
        let claim = try await ClaimMeasurement(databases: databases, logger: logger)
            .run(claimers: 8, batch: 50, seconds: seconds, seeded: 300_000)
        report.claim = claim
        progress(String(format: "  8 claimers, batches of 50  %8.0f items/s", claim.rate) + (claim.ranDry ? " (ran dry: a lower bound)" : ""))
        }

        // 3. End to end: serve --role all, ordered subscriptions, fixed offered rates.
        if phases.contains("e2e") {
        progress("end to end: provider → serve → \(subscriptions) ordered subscriptions, \(seconds) s per rate")
        try await databases.recreate("bench_e2e")
        let serve = try await ServeProcess.start(
            binary: echorelay, environment: try environment(database: "bench_e2e", role: "all"),
            logPath: logFolder + "/bench-serve-e2e.log"
        )
        let secrets = try await EndToEndMeasurement.subscribe(
            serverURL: serve.url, adminToken: adminToken, subscriberPort: subscriber.port, count: subscriptions
        )
        subscriberSecrets.withLock { $0 = secrets }
        let e2eURL = try databases.url(of: "bench_e2e")
        let sizeBefore = try await databases.withClient(url: e2eURL) { try await $0.integer("SELECT pg_database_size(current_database())", logger: logger) }
        let client = LoadGenerator.client(connections: 256)
        let measurement = EndToEndMeasurement(
            subscriptions: subscriptions, tracker: tracker,
            generator: LoadGenerator(serverURL: serve.url, providerURL: providerURL, secret: secret, users: users, client: client)
        )
        for (index, rate) in rates.enumerated() {
            let step = try await measurement.step(index, rate: rate, duration: .seconds(seconds), run: "e\(index)")
            report.latency.append(step)
            progress(String(format: "  %5d/s offered  %7.0f/s delivered  p50 %7.1f  p99 %7.1f  p99.9 %7.1f  max %7.1f ms  backlog %d→%d",
                         rate, step.deliveredRate, step.p50, step.p99, step.p999, step.max, step.backlogMiddle, step.backlogEnd)
                  + (step.sustained(subscriptions: subscriptions) ? "" : "  not sustained"))
            if !step.drained { break }
        }
        try await client.shutdown()
        report.peakResident = serve.peakResidentBytes()
        let snapshot = tracker.snapshot
        report.badSignatures = snapshot.badSignatures
        try await serve.stop()

        // 4. Storage: what the end-to-end run left in its database.
        report.storage = try await databases.withClient(url: e2eURL) { client in
            try await client.query("CHECKPOINT", logger: logger)
            let size = try await client.integer("SELECT pg_database_size(current_database())", logger: logger)
            let events = try await client.integer("SELECT count(*) FROM events", logger: logger)
            return (events: Int(events), bytes: Int(size - sizeBefore))
        }
        }

        let table = report.markdown(seconds: seconds, users: users)
        print(table)
        try report.csv.write(toFile: csv, atomically: true, encoding: .utf8)
    }
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
