import AsyncHTTPClient
import EchoRelayCore
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Builds and sends signed ingest requests as the identity provider would: a Standard
/// Webhooks signature over the body, and OAuth Echo credentials signed for the stand-in
/// provider. A quarter of the events are `phone.changed`, the rest `token.rotated`.
struct LoadGenerator: Sendable {
    let serverURL: String
    let providerURL: String
    let secret: WebhookSecret
    let users: Int
    let client: HTTPClient

    /// One connection per concurrent request, up to `connections`.
    static func client(connections: Int) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(60))
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    func request(id: String) -> HTTPClientRequest {
        let n = Int.random(in: 0..<users)
        let user = "u\(n)"
        let now = Date()
        let echo = try! OAuth1.authorizationHeader(
            method: "GET", url: providerURL, consumerKey: BenchProvider.consumerKey, consumerSecret: BenchProvider.consumerSecret,
            token: BenchProvider.token(of: user), tokenSecret: BenchProvider.tokenSecret(of: user),
            nonce: OAuth1.randomNonce(), timestamp: String(Int(now.timeIntervalSince1970))
        )
        let phoneChange = n % 4 == 0
        let data = phoneChange ? #"{"phone_number":"\#(BenchProvider.phoneNumber(of: user))"}"# : "{}"
        let body = #"{"id":"\#(id)","type":"\#(phoneChange ? "phone.changed" : "token.rotated")","user_id":"\#(user)","occurred_at":"\#(RFC3339.format(now))","data":\#(data),"echo":{"service_provider":"\#(providerURL)","authorization":"\#(echo.replacingOccurrences(of: "\"", with: "\\\""))"}}"#
        let bytes = Array(body.utf8)
        let messageID = "msg_" + id
        let timestamp = Int64(now.timeIntervalSince1970)
        var request = HTTPClientRequest(url: serverURL + "/v1/events")
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: StandardWebhooks.idHeader, value: messageID)
        request.headers.add(name: StandardWebhooks.timestampHeader, value: String(timestamp))
        request.headers.add(name: StandardWebhooks.signatureHeader,
                            value: StandardWebhooks.signature(id: messageID, timestamp: timestamp, body: bytes, secret: secret))
        request.body = .bytes(ByteBuffer(bytes: bytes))
        return request
    }

    /// Sends one event; true when it was acknowledged with `202`.
    func send(id: String) async -> Bool {
        do {
            let response = try await client.execute(request(id: id), timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 64 * 1024)
            return response.status == .accepted
        } catch {
            return false
        }
    }

    /// Closed loop: `connections` senders, each sending its next event as soon as the last
    /// is acknowledged, for `duration`. Returns events acknowledged per second.
    func closedLoop(run: String, connections: Int, duration: Duration) async -> (rate: Double, failed: Int) {
        let start = ContinuousClock.now
        let deadline = start + duration
        let counts = await withTaskGroup(of: (Int, Int).self) { group in
            for sender in 0..<connections {
                group.addTask {
                    var acknowledged = 0, failed = 0, n = 0
                    while ContinuousClock.now < deadline {
                        if await send(id: EventIDs.make(run: run, step: sender, n: n)) { acknowledged += 1 } else { failed += 1 }
                        n += 1
                    }
                    return (acknowledged, failed)
                }
            }
            return await group.reduce(into: (0, 0)) { $0.0 += $1.0; $0.1 += $1.1 }
        }
        let elapsed = ContinuousClock.now - start
        return (Double(counts.0) / elapsed.secondsDouble, counts.1)
    }

    /// Open loop: event n leaves at `start + n / rate` whatever happened to the earlier ones,
    /// as a provider's traffic does. Returns how many were not acknowledged.
    func openLoop(run: String, step: Int, rate: Int, duration: Duration, start: ContinuousClock.Instant, tracker: Tracker) async -> Int {
        let total = Int(Double(rate) * duration.secondsDouble)
        let interval = Duration.seconds(1) / rate
        let failures = Counter()
        await withDiscardingTaskGroup { group in
            var n = 0
            while n < total {
                let now = ContinuousClock.now
                while n < total, start + interval * n <= now {
                    let id = EventIDs.make(run: run, step: step, n: n)
                    group.addTask {
                        if await send(id: id) { tracker.acknowledged() } else { failures.add() }
                    }
                    n += 1
                }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        return failures.value
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}
