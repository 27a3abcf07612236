import EchoRelayCore
@testable import EchoRelayWorkers
import Foundation
import Hummingbird
import Synchronization
import Testing
import TestSupport

/// DNS rebinding: the address checked before a webhook is the address it connects to. Here
/// the name `localhost` resolves (to the system) to 127.0.0.1, where a listener counts what
/// reaches it; the check gave 127.0.0.2, where another listens on the same port. Pinned to
/// the checked address, the webhook reaches 127.0.0.2 only, with `Host` still the name.
@Suite struct PinnedAddressTests {
    /// The `Host` of each webhook a listener received.
    final class Seen: Sendable {
        private let hosts = Mutex<[String]>([])
        var all: [String] { hosts.withLock { $0 } }
        func add(_ host: String) { hosts.withLock { $0.append(host) } }
    }

    static func counting(_ seen: Seen) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            seen.add(request.head.authority ?? "")
            return Response(status: .noContent)
        }
        return router
    }

    @Test func aWebhookConnectsToTheCheckedAddressNotToWhatTheNameResolvesToNow() async throws {
        let resolvedNow = Seen(), checked = Seen()
        try await LoopbackServer.run(Self.counting(resolvedNow), host: "127.0.0.1") { port in
            try await LoopbackServer.run(Self.counting(checked), host: "127.0.0.2", port: port) { _ in
                let client = WebhookClient(timeout: .seconds(5))
                let url = "http://localhost:\(port)/hook"
                let pinned = await client.post(url: url, connectingTo: .v4(0x7F00_0002), headers: [], body: Array("{}".utf8))
                #expect(pinned.statusCode == 204, "\(pinned)")
                let again = await client.post(url: url, connectingTo: .v4(0x7F00_0002), headers: [], body: Array("{}".utf8))
                #expect(again.statusCode == 204)
                #expect(resolvedNow.all.isEmpty, "no request reached the address the name resolves to now")
                #expect(checked.all == ["localhost:\(port)", "localhost:\(port)"], "the Host header keeps the name")

                // Without a checked address (no check made), the name is resolved as usual.
                let unpinned = await client.post(url: url, headers: [], body: Array("{}".utf8))
                #expect(unpinned.statusCode == 204)
                #expect(resolvedNow.all.count == 1)

                // When the check gives another address, the next webhook goes there.
                let moved = await client.post(url: url, connectingTo: .v4(0x7F00_0001), headers: [], body: Array("{}".utf8))
                #expect(moved.statusCode == 204)
                #expect(resolvedNow.all.count == 2 && checked.all.count == 2)
                await client.shutdown()
            }
        }
    }
}
