import EchoRelayServer
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// `GET /metrics` counts what a live server did, in the Prometheus text format.
@Suite struct MetricsTests {
    @Test func countsIngestVerificationDeliveriesAndReplaysAndShowsTheQueues() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let event = try await f.pushVerified("token.rotated", userID: "m1", session: try f.session("m1"))
                _ = try await f.server.ingest(Array(#"{"id":"evt_again"}"#.utf8))  // signed, but not an event: refused
                let unsigned = try await f.server.http.send(.POST, "/v1/events", headers: [("Content-Type", "application/json")],
                                                            body: Array("{}".utf8))
                #expect(unsigned.status == 401)
                try await subscriber.waitForDeliveries(count: 1, within: .seconds(20))
                let eventID = try #require(event["id"] as? String)
                #expect(try await f.server.http.send(
                    .POST, "/v1/events/\(eventID)/replay", headers: [("Authorization", "Bearer \(LiveServer.adminToken)"),
                                                                     ("Content-Type", "application/json")],
                    body: Array(#"{"reason":"metrics test"}"#.utf8)
                ).status == 202)
                try await subscriber.waitForDeliveries(count: 2, within: .seconds(20))

                // The replayed delivery's attempt is recorded just after the subscriber answers,
                // and counted once it is committed. A scrape reads the queues before it emits the
                // counters, so the scrape that first shows the count may hold a queue read from just
                // before that commit: the figures are read from the scrape after it.
                let deadline = ContinuousClock.now + .seconds(10)
                while PrometheusText(try await f.server.http.get("/metrics").text)["echorelay_deliveries_total", ["outcome": "delivered"]] != 2,
                      ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                }
                // The queue gauges are the sampler's (every 100 ms here): read once they are drained.
                let metrics = try await Self.scrape(f.server.http) { metrics in
                    ["verification", "delivery", "replay"].allSatisfy { metrics["echorelay_queue_depth", ["kind": $0]] == 0 }
                }
                #expect(metrics["echorelay_events_received_total", ["type": "token.rotated", "result": "accepted"]] == 1)
                #expect(metrics["echorelay_events_received_total", ["type": "unknown", "result": "refused"]] == 2)
                #expect(metrics["echorelay_verification_outcomes_total", ["outcome": "verified", "reason": "provider_confirmed"]] == 1)
                #expect(metrics["echorelay_deliveries_total", ["outcome": "delivered"]] == 2)
                #expect(metrics["echorelay_delivery_attempt_duration_seconds_count", [:]] == 2)
                #expect(metrics["echorelay_replays_total", ["kind": "event"]] == 1)
                for kind in ["verification", "delivery", "replay"] {
                    #expect(metrics["echorelay_queue_depth", ["kind": kind]] == 0, "\(kind)")
                    #expect(metrics["echorelay_queue_oldest_due_age_seconds", ["kind": kind]] == 0, "\(kind)")
                }
                #expect(!metrics.text.contains(eventID) && !metrics.text.contains("m1"), "ids are never labels")
            }
        }
    }

    /// The series docs/alerts.yml reads are the ones a real scrape shows, each subscription's
    /// health among them (labelled by its id, gone with it), and promtool lints the scrape clean.
    @Test func aScrapeCarriesEverySeriesTheAlertsReadAndPassesPromtool() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                let id = try #require(subscription["id"] as? String)
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                _ = try await f.pushVerified("token.rotated", userID: "m3", session: try f.session("m3"))
                try await subscriber.waitForDeliveries(count: 1, within: .seconds(20))

                let scrape = try await f.server.http.get("/metrics").text
                let metrics = PrometheusText(scrape)
                #expect(metrics["echorelay_subscription_enabled", ["subscription": id]] == 1)
                #expect(metrics["echorelay_subscription_auto_disabled", ["subscription": id]] == 0)
                #expect(metrics["echorelay_subscription_failing_seconds", ["subscription": id]] == 0)
                #expect(metrics["echorelay_subscription_oldest_due_age_seconds", ["subscription": id]] == 0)
                let named = Set(try String(contentsOf: AlertRulesTests.rules, encoding: .utf8)
                    .matches(of: /echorelay_[a-z_]+/).map { String($0.output) })
                #expect(named.count >= 7)
                // The poller's series show only in the process that polls the Shared Signals
                // transmitter (SharedSignalsPollTests scrapes one).
                for name in named where !name.hasPrefix("echorelay_set_poll_") {
                    #expect(scrape.contains("\n\(name){") || scrape.contains("\n\(name) "), "the alerts read \(name), which /metrics does not show")
                }
                let linted = try await Promtool.run(["check", "metrics"], input: Data(scrape.utf8))
                #expect(linted.status == 0, "\(linted.output)")

                let admin = [("Authorization", "Bearer \(LiveServer.adminToken)")]
                #expect(try await f.server.http.send(.POST, "/v1/subscriptions/\(id)/disable", headers: admin).status == 200)
                let disabled = try await Self.scrape(f.server.http) { $0["echorelay_subscription_enabled", ["subscription": id]] == 0 }
                #expect(disabled["echorelay_subscription_enabled", ["subscription": id]] == 0)
                #expect(disabled["echorelay_subscription_auto_disabled", ["subscription": id]] == 0, "a person disabled it")
                #expect(try await f.server.http.send(.DELETE, "/v1/subscriptions/\(id)", headers: admin).status == 204)
                let gone = try await Self.scrape(f.server.http) { !$0.text.contains(id) }
                #expect(!gone.text.contains(id), "a deleted subscription's series are gone")
            }
        }
    }

    @Test func theQueueShowsWorkThatNoWorkerHasTaken() async throws {
        // An ingest-only process: the event waits for a worker that is not there.
        try await LiveServer.run(role: .ingest) { server in
            #expect(try await server.ingest(eventBody(id: "evt_waiting", userID: "m2")).status == 202)
            try await Task.sleep(for: .milliseconds(1100))
            let metrics = try await Self.scrape(server.http) { ($0["echorelay_queue_oldest_due_age_seconds", ["kind": "verification"]] ?? 0) >= 1 }
            #expect(metrics["echorelay_queue_depth", ["kind": "verification"]] == 1)
            #expect((metrics["echorelay_queue_oldest_due_age_seconds", ["kind": "verification"]] ?? 0) >= 1)
            #expect(metrics["echorelay_queue_depth", ["kind": "delivery"]] == 0)
        }
    }

    /// Scrapes until `settled` holds (the gauges are sampled, not read at each scrape), for up
    /// to 10 s, and returns that scrape (the last one if it never held).
    static func scrape(_ http: HTTPTestClient, until settled: (PrometheusText) -> Bool) async throws -> PrometheusText {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let metrics = PrometheusText(try await http.get("/metrics").text)
            if settled(metrics) || ContinuousClock.now >= deadline { return metrics }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// The samples of a Prometheus text exposition, looked up by name and labels in any order.
struct PrometheusText {
    let text: String
    private var samples: [String: Double] = [:]

    init(_ text: String) {
        self.text = text
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let series = line[..<space]
            guard let brace = series.firstIndex(of: "{") else {
                samples[Self.key(String(series), [:])] = value
                continue
            }
            var labels: [String: String] = [:]
            for pair in series[series.index(after: brace)..<series.index(before: series.endIndex)].split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                labels[String(parts[0])] = String(parts[1]).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
            samples[Self.key(String(series[..<brace]), labels)] = value
        }
    }

    subscript(name: String, labels: [String: String]) -> Double? {
        samples[Self.key(name, labels)]
    }

    private static func key(_ name: String, _ labels: [String: String]) -> String {
        name + "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
    }
}
