import AsyncHTTPClient
import EchoRelayCore
import Foundation
import Histogram
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// One offered-rate step of the end-to-end measurement.
struct LatencyStep: Sendable {
    let offeredRate: Int
    let sent: Int
    let failed: Int
    /// Events per second whose deliveries reached every subscriber within the window.
    let deliveredRate: Double
    let p50, p99, p999, max: Double  // milliseconds
    /// Deliveries still owed at the window's middle and at its end.
    let backlogMiddle, backlogEnd: Int
    let drained: Bool
    let outOfOrder, duplicates: Int

    /// Kept up: the backlog at the end is under a second of work and did not grow over the
    /// window's second half, nothing failed, and what was left drained.
    func sustained(subscriptions: Int) -> Bool {
        let secondOfWork = offeredRate * subscriptions
        return failed == 0 && drained && backlogEnd <= secondOfWork && backlogEnd - backlogMiddle <= secondOfWork / 4
    }
}

/// Provider → EchoRelay → subscribers, at fixed offered rates, with ordered subscriptions.
struct EndToEndMeasurement {
    let subscriptions: Int
    let tracker: Tracker
    let generator: LoadGenerator

    /// Creates the ordered subscriptions and returns their signing secrets, in order.
    static func subscribe(serverURL: String, adminToken: String, subscriberPort: Int, count: Int) async throws -> [WebhookSecret] {
        var secrets: [WebhookSecret] = []
        for n in 0..<count {
            var request = HTTPClientRequest(url: serverURL + "/v1/subscriptions")
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer " + adminToken)
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: """
                {"url":"http://127.0.0.1:\(subscriberPort)/hooks/\(n)","event_types":["token.rotated","phone.changed"],"ordered":true}
                """))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .created,
                  let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
                  let secret = object["secret"] as? String else {
                throw BenchError("creating a subscription answered \(response.status.code)")
            }
            secrets.append(try WebhookSecret(secret))
        }
        return secrets
    }

    func step(_ index: Int, rate: Int, duration: Duration, run: String) async throws -> LatencyStep {
        let start = ContinuousClock.now + .milliseconds(100)
        let interval = Duration.seconds(1) / rate
        tracker.begin(step: index, start: start, interval: interval)
        let before = tracker.counts
        // Deliveries owed at time t: every event meant to have left by t, to every subscriber.
        func backlog(at instant: ContinuousClock.Instant) -> Int {
            let offered = min(Int(Double(rate) * duration.secondsDouble), Int((instant - start) / interval))
            return offered * subscriptions - tracker.counts.delivered
        }
        async let middle: Int = { try? await Task.sleep(until: start + duration / 2); return backlog(at: .now) }()
        async let end: (Int, Int) = {
            try? await Task.sleep(until: start + duration)
            return (backlog(at: .now), tracker.counts.delivered)
        }()
        let failed = await generator.openLoop(run: run, step: index, rate: rate, duration: duration, start: start, tracker: tracker)
        let (backlogMiddle, (backlogEnd, deliveredInWindow)) = await (middle, end)

        // Let what is left arrive before the next step, so steps do not mix.
        let drainDeadline = ContinuousClock.now + .seconds(30)
        var drained = false
        while ContinuousClock.now < drainDeadline {
            let now = tracker.counts
            if now.delivered >= now.acknowledged * subscriptions { drained = true; break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let after = tracker.counts
        let histogram = tracker.latencies
        func ms(_ micros: UInt64) -> Double { Double(micros) / 1000 }
        return LatencyStep(
            offeredRate: rate, sent: Int(Double(rate) * duration.secondsDouble), failed: failed,
            deliveredRate: Double(deliveredInWindow) / Double(subscriptions) / duration.secondsDouble,
            p50: ms(histogram.valueAtPercentile(50)), p99: ms(histogram.valueAtPercentile(99)),
            p999: ms(histogram.valueAtPercentile(99.9)), max: ms(histogram.max),
            backlogMiddle: backlogMiddle, backlogEnd: backlogEnd, drained: drained,
            outOfOrder: after.outOfOrder - before.outOfOrder, duplicates: after.duplicates - before.duplicates
        )
    }
}
