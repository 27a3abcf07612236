import EchoRelayCore
import EchoRelayServer
import Foundation
import NIOHTTP1
import TestSupport
import Testing

/// A request without valid credentials costs the database nothing: the statements PostgreSQL
/// receives are counted on the wire (`StatementCounter`) while such requests are sent.
@Suite struct UnauthenticatedCostTests {
    static let unknownToken = "er_" + String(repeating: "Q", count: 43)

    @Test func requestsWithoutValidCredentialsRunNoStatement() async throws {
        try await Self.withCountedServer(configure: {
            $0.authenticationFailureLimit = 100_000
            $0.metricsToken = Secret("metrics-token-" + String(repeating: "k9", count: 16))
        }) { http, counter in
            let before = try await counter.settled()

            // The first look at an unknown token, or console session key, asks the database
            // once, and the first readiness probe twice (is there a migrations table, and
            // what does it hold?)…
            #expect(try await http.get("/readyz").status == 200)
            let cookie = [("Cookie", "echorelay_console=\(String(repeating: "z", count: 43))")]
            let first = try await http.get("/v1/subscriptions", bearer: Self.unknownToken)
            #expect(first.status == 401)
            let firstConsole = try await http.send(.GET, "/console", headers: cookie)
            #expect([200, 303].contains(firstConsole.status), "not signed in")
            let afterFirst = try await counter.settled()
            #expect(afterFirst - before == 4, "each first lookup reaches the database: \(afterFirst - before)")

            // …and never again; nor does anything else without valid credentials.
            for _ in 0..<50 {
                #expect(try await http.get("/v1/subscriptions", bearer: Self.unknownToken).status == 401)
                #expect(try await http.get("/v1/events?user_id=1", bearer: "not-a-token").status == 401)
                #expect(try await http.get("/v1/audit").status == 401)
                #expect(try await http.get("/metrics", bearer: "wrong").status == 401)
                #expect(try await http.get("/healthz").status == 200)
                #expect(try await http.get("/readyz").status == 200)
                #expect(try await http.get("/metrics").status == 401, "no token")
                let console = try await http.send(.GET, "/console", headers: cookie)
                #expect(console.status == firstConsole.status)
            }
            let after = try await counter.settled()
            #expect(after == afterFirst, "\(after - afterFirst) statements for 400 requests without valid credentials")
        }
    }

    /// A scrape shows the gauges as the sampler last read them, and runs no statement itself.
    @Test func scrapesRunNoStatement() async throws {
        try await Self.withCountedServer(configure: { _ in }) { http, counter in
            _ = try await counter.settled()
            let before = try await counter.settled()
            for _ in 0..<100 {
                let scrape = try await http.get("/metrics")
                #expect(scrape.status == 200 && scrape.text.contains("echorelay_queue_depth{kind=\"verification\"} 0"))
            }
            let after = try await counter.settled()
            #expect(after == before, "\(after - before) statements for 100 scrapes")
        }
    }

    /// An ingest-only `serve` on a fresh database whose statements `StatementCounter` counts,
    /// with nothing of its own in the background: no workers, no backlog reading, no sweeping,
    /// and the gauges sampled once at start.
    static func withCountedServer(configure: @Sendable @escaping (inout ServerConfiguration) -> Void,
                                  _ body: @Sendable @escaping (HTTPTestClient, StatementCounter) async throws -> Void) async throws {
        try await TestDatabase.withFresh { database in
            let target = try #require(URLComponents(string: database.url)?.port)
            let counter = try await StatementCounter(targetPort: target)
            let url = database.url.replacingOccurrences(of: ":\(target)/", with: ":\(counter.port)/")
            try await HardeningServer.run(databaseURL: url, configure: {
                $0.role = .ingest
                $0.backlogLimit = nil
                $0.consoleSessionSweepInterval = .seconds(3600)
                $0.metricsSampleInterval = .seconds(3600)
                configure(&$0)
            }) { http in
                _ = try await counter.settled()
                try await body(http, counter)
            }
        }
    }

    /// `ECHORELAY_METRICS_TOKEN`: set, a scrape must carry it; unset, `/metrics` is open.
    @Test func theMetricsTokenGuardsTheScrapeWhenSet() async throws {
        let token = "metrics-token-" + String(repeating: "k9", count: 16)
        try await HardeningServer.withStore(.sqlite) { url in
            try await HardeningServer.run(databaseURL: url, configure: { $0.metricsToken = Secret(token) }) { http in
                let open = try await http.get("/metrics")
                #expect(open.status == 401 && open.headers["WWW-Authenticate"] == ["Bearer"])
                #expect(!open.text.contains(token))
                #expect(try await http.get("/metrics", bearer: token + "x").status == 401)
                let scraped = try await http.get("/metrics", bearer: token)
                #expect(scraped.status == 200 && scraped.text.contains("echorelay_events_received_total"))
            }
            try await HardeningServer.run(databaseURL: url) { http in
                let open = try await http.get("/metrics")
                #expect(open.status == 200)
            }
        }
    }
}
