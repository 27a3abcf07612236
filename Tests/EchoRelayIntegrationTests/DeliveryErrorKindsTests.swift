import AsyncHTTPClient
import EchoRelayCore
import EchoRelayServer
@testable import EchoRelayWorkers
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A failed delivery says what failed: a port where nothing listens is `connection_refused`
/// at once (not a 5-second `connect` error), a listener that never accepts is
/// `connect_timeout` after the connect timeout, a subscriber that cuts the connection is
/// `reset`, and each kind is counted in `/metrics`.
@Suite struct DeliveryErrorKindsTests {
    /// The first attempt of the event's one delivery, once recorded.
    static func firstAttempt(_ f: EchoFixture, url: String, user: String) async throws -> [String: Any] {
        _ = try await f.subscribe(url: url)
        let event = try await f.pushVerified("token.rotated", userID: user, session: try f.session(user))
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let attempts = try await f.deliveries(of: event["id"] as! String).first?["attempts"] as? [[String: Any]] ?? []
            if let attempt = attempts.first { return attempt }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestSetupError("no attempt was recorded: \(try await f.deliveries(of: event["id"] as! String)), \(event)")
    }

    static let delivery = DeliveryConfiguration(timeout: .seconds(5), connectTimeout: .seconds(1), retrySchedule: [.seconds(600)],
                                                allowPrivateSubscribers: true)

    @Test func aPortWhereNothingListensIsConnectionRefusedAtOnceAndCounted() async throws {
        try await EchoFixture.run(delivery: DeliveryConfiguration(timeout: .seconds(5), connectTimeout: .seconds(4),
                                                                  retrySchedule: [.seconds(600)], allowPrivateSubscribers: true)) { f in
            let closed = try freeLoopbackPort()  // bound and released: nothing listens there
            let attempt = try await Self.firstAttempt(f, url: "http://127.0.0.1:\(closed)/hooks", user: "ek-refused")
            #expect(attempt["error_kind"] as? String == "connection_refused", "\(attempt)")
            #expect((attempt["error"] as? String)?.hasPrefix("connection refused") == true, "\(attempt)")
            #expect(attempt["status_code"] is NSNull)
            // Refused, not retried until the connect timeout (4 s here) ran out.
            #expect(try #require(attempt["duration_ms"] as? Int) < 4_000, "\(attempt)")
            let metrics = try await f.server.http.get("/metrics").text
            #expect(metrics.contains(#"echorelay_delivery_errors_total{kind="connection_refused"} 1"#), "\(metrics)")
        }
    }

    /// A listener whose queue is full drops new connections' SYNs: the connection is never
    /// made, and the attempt fails as `connect_timeout` at the connect timeout.
    @Test func aListenerThatNeverAcceptsIsAConnectTimeout() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        } }
        #expect(bound == 0 && listen(listener, 0) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            getsockname(listener, $0, &length)
        } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        // Fill the queue: these connections are made (or left trying: non-blocking, so the
        // test never waits for one) and never accepted.
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<2 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var target = address
            _ = withUnsafePointer(to: &target) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            } }
            fillers.append(filler)
        }
        try await Task.sleep(for: .milliseconds(100))  // the handshakes are done on loopback
        try await EchoFixture.run(delivery: Self.delivery) { f in
            let attempt = try await Self.firstAttempt(f, url: "http://127.0.0.1:\(port)/hooks", user: "ek-timeout")
            #expect(attempt["error_kind"] as? String == "connect_timeout", "\(attempt)")
            #expect((attempt["error"] as? String)?.contains("ECHORELAY_DELIVERY_CONNECT_TIMEOUT") == true, "\(attempt)")
        }
    }

    /// A subscriber that takes the request and closes the connection without a word.
    @Test func aSubscriberThatCutsTheConnectionIsAReset() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in channel.pipeline.addHandler(CloseOnRead()) }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        try await EchoFixture.run(delivery: Self.delivery) { f in
            let attempt = try await Self.firstAttempt(f, url: "http://127.0.0.1:\(server.localAddress!.port!)/hooks", user: "ek-reset")
            #expect(attempt["error_kind"] as? String == "reset", "\(attempt)")
            let metrics = try await f.server.http.get("/metrics").text
            #expect(metrics.contains(#"echorelay_delivery_errors_total{kind="reset"} 1"#))
        }
    }

    /// The kinds of errors AsyncHTTPClient and NIO throw, each to its kind.
    @Test func eachErrorHasItsKind() {
        #expect(WebhookClient.kind(of: HTTPClientError.connectTimeout) == .connectTimeout)
        #expect(WebhookClient.kind(of: ChannelError.connectTimeout(.seconds(1))) == .connectTimeout)
        #expect(WebhookClient.kind(of: HTTPClientError.deadlineExceeded) == .timeout)
        #expect(WebhookClient.kind(of: HTTPClientError.readTimeout) == .timeout)
        #expect(WebhookClient.kind(of: HTTPClientError.remoteConnectionClosed) == .reset)
        #expect(WebhookClient.kind(of: IOError(errnoCode: ECONNREFUSED, reason: "connect")) == .connectionRefused)
        #expect(WebhookClient.kind(of: IOError(errnoCode: ECONNRESET, reason: "read")) == .reset)
        #expect(WebhookClient.kind(of: IOError(errnoCode: EHOSTUNREACH, reason: "connect")) == .connect)
    }
}

/// Reads the request's first bytes, then closes the connection without answering.
private final class CloseOnRead: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.close(promise: nil)
    }
}

/// The kind is recorded and shown the same on both stores.
@Suite struct DeliveryErrorKindsOnBothStoresTests {
    @Test(arguments: [StoreKind.postgres, .sqlite])
    func aClosedPortIsRecordedAsConnectionRefused(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let closed = try freeLoopbackPort()
            let created = try await f.http.send(.POST, "/v1/subscriptions", headers: [
                ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
            ], body: Array(#"{"url": "http://127.0.0.1:\#(closed)/hooks", "event_types": ["token.rotated"]}"#.utf8))
            let id = try #require(created.json?["id"] as? String)
            let event = try await f.pushed("token.rotated", userID: "ek-both", token: try await f.session("ek-both"))
            let eventID = try #require(event["id"] as? String)
            var attempt: [String: Any]?
            let deadline = ContinuousClock.now + .seconds(20)
            while attempt == nil, ContinuousClock.now < deadline {
                let deliveries = try await f.outcome(of: eventID)["deliveries"] as? [[String: Any]] ?? []
                attempt = (deliveries.first { $0["subscription_id"] as? String == id }?["attempts"] as? [[String: Any]])?.first
                if attempt == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(attempt?["error_kind"] as? String == "connection_refused", "\(String(describing: attempt))")
            let shown = try await ChildProcess.run(["events", "show", eventID],
                                                   environment: ["ECHORELAY_URL": f.http.baseURL, "ECHORELAY_TOKEN": LiveServer.adminToken])
            #expect(shown.stdout.contains("connection_refused: connection refused"), "the attempt log shows it: \(shown.stdout)")
        }
    }
}
