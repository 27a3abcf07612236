import EchoRelayCore
import EchoRelayQueue
import EchoRelayPostgres
import EchoRelayStandIns
import EchoRelayWorkers
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import TestSupport
import Testing

/// Subscriptions on one host get as many webhooks in flight as their caps allow: the HTTP
/// client's connections to a host do not cap them lower. (AsyncHTTPClient keeps 8 connections
/// a host unless told otherwise, and held every webhook beyond 8 in its own queue.)
@Suite struct WebhookConnectionsTests {
    @Test func twoSubscriptionsOnOneHostGetBothTheirCapsInFlight() async throws {
        let cap = 12
        let perSubscription = 24
        let peak = PeakCount()
        try await HandOffTests.withStore { store, _ in
            try await LoopbackServer.run(Self.holding(.post, until: 2 * cap, counting: peak)) { port in
                for path in ["a", "b"] {
                    _ = try await store.createSubscription(
                        SubscriptionFields(url: "http://127.0.0.1:\(port)/hooks/\(path)", eventTypes: EventType.allCases, ordered: false),
                        ownerTokenID: nil, secret: WebhookSecret.generate())
                }
                for index in 0..<perSubscription { try await store.ingest("e\(index)", user: "u\(index)") }
                try await store.verifyAll()
                var configuration = DeliveryWorkerConfiguration()
                configuration.allowPrivateSubscribers = true
                configuration.perSubscriptionConcurrency = cap
                let worker = Task {
                    try await DeliveryWorker(store: store, wake: WakeSignal(), configuration: configuration, owner: "worker",
                                             logger: TestLogger.quiet).run()
                }
                defer { worker.cancel() }
                try await waitUntil(within: .seconds(30), "every webhook") { peak.finished == 2 * perSubscription }
                // Both caps together; 8 is what one host got before.
                #expect(peak.highest == 2 * cap, "both caps in flight at once to the one host, and no more: \(peak.highest)")
            }
        }
    }

    /// The echo client likewise: as many echo requests in flight to the one provider host as
    /// it is told (the verify worker tells it its concurrency).
    @Test func echoRequestsToOneProviderGoOutAsManyAtOnceAsAllowed() async throws {
        let allowed = VerifyWorkerConfiguration().concurrency
        let peak = PeakCount()
        try await LoopbackServer.run(Self.holding(.get, until: allowed, counting: peak)) { port in
            let client = EchoClient(timeout: .seconds(10), connectionsPerHost: allowed)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<allowed {
                    group.addTask {
                        _ = await client.send(EchoTarget(url: "http://127.0.0.1:\(port)/1.1/account/verify_credentials.json",
                                                         authorization: Secret("OAuth oauth_token=\"t\""), tokenHash: nil))
                    }
                }
            }
            await client.shutdown()
        }
        #expect(peak.finished == allowed)
        #expect(peak.highest == allowed, "echo requests in flight at once to the one host: \(peak.highest)")
    }

    /// Answers every request to `method` once `target` are held at once, or after 3 s (a
    /// client that cannot send that many at once gets its answers late, not never): the most
    /// held at once is then what the client could send, however slowly its connections open.
    private static func holding(_ method: HTTPRequest.Method, until target: Int, counting peak: PeakCount) -> Router<BasicRequestContext> {
        let router = Router()
        router.on("**", method: method) { _, _ -> Response in
            peak.enter()
            defer { peak.leave() }
            let deadline = ContinuousClock.now + .seconds(3)
            while peak.highest < target, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            return Response(status: method == .get ? .ok : .noContent, body: .init(byteBuffer: ByteBuffer(string: method == .get ? "{}" : "")))
        }
        return router
    }
}

/// Requests in flight now, the most at once, and how many have finished.
private final class PeakCount: Sendable {
    private let state = Mutex((now: 0, highest: 0, finished: 0))

    var highest: Int { state.withLock { $0.highest } }
    var finished: Int { state.withLock { $0.finished } }

    func enter() {
        state.withLock { state in
            state.now += 1
            state.highest = max(state.highest, state.now)
        }
    }

    func leave() {
        state.withLock { state in
            state.now -= 1
            state.finished += 1
        }
    }
}
