import EchoRelayCore
import EchoRelayServer
@testable import EchoRelayWorkers
import EchoRelayStandIns
import Foundation
import Hummingbird
import NIOSSL
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
                // These tests are about where a webhook goes, not how fast: a generous timeout,
                // since the suite starts most of its tests at once on a small machine.
                let client = WebhookClient(timeout: .seconds(30), connectTimeout: .seconds(5))
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

    /// A test CA and a certificate for `name` signed by it, made with the openssl tool.
    static func certificates(in folder: URL, name: String = "localhost") async throws {
        let script = """
            set -e
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 2 \\
                -subj "/CN=EchoRelay test CA" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr -subj "/CN=\(name)"
            printf 'subjectAltName=DNS:\(name)\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
            """
        let run = try Spawned("/bin/bash", ["-c", script], workingDirectory: folder.path)
        guard try await run.wait() == 0 else { throw TestSetupError("openssl failed: \(String(decoding: run.standardError, as: UTF8.self))") }
    }

    /// An https listener (Python's ssl) on the address and port given, printing the Host and
    /// the TLS server name of each POST.
    static let httpsListener = """
        import http.server, ssl, sys
        address, port, certificate, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
        names = []
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                print(f"host={self.headers['Host']} sni={names[-1] if names else None}", flush=True)
                self.send_response(204)
                self.end_headers()
            def log_message(self, *arguments):
                pass
        server = http.server.ThreadingHTTPServer((address, port), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        context.sni_callback = lambda connection, name, context: names.append(name)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print("ready", flush=True)
        server.serve_forever()
        """

    /// Starts `httpsListener` and waits until it listens.
    static func listen(on address: String, port: Int, certificates folder: URL) async throws -> Spawned {
        let listener = try Spawned("/usr/bin/env", ["python3", "-c", Self.httpsListener, address, String(port),
                                                     folder.appendingPathComponent("server.pem").path,
                                                     folder.appendingPathComponent("server.key").path])
        let deadline = ContinuousClock.now + .seconds(20)
        while !String(decoding: listener.standardOutput, as: UTF8.self).contains("ready") {
            guard listener.isRunning, ContinuousClock.now < deadline else {
                listener.signal(SIGKILL)
                throw TestSetupError("the https listener did not start: \(String(decoding: listener.standardError, as: UTF8.self))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return listener
    }

    static func requests(_ listener: Spawned) -> [String] {
        String(decoding: listener.standardOutput, as: UTF8.self).split(separator: "\n").dropFirst().map(String.init)
    }

    /// Over https the pinned webhook still checks the certificate against the name, and sends
    /// the name as the TLS server name: connecting to 127.0.0.2 for `localhost` succeeds with a
    /// certificate for `localhost`, where connecting to 127.0.0.2 by address fails it.
    @Test func overHTTPSThePinnedWebhookVerifiesTheCertificateForTheName() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pinned-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await Self.certificates(in: folder)
        let port = try freeLoopbackPort()
        let listener = try await Self.listen(on: "127.0.0.2", port: port, certificates: folder)
        defer { listener.signal(SIGKILL) }

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(folder.appendingPathComponent("ca.pem").path))
        let client = WebhookClient(timeout: .seconds(30), connectTimeout: .seconds(5), tls: tls)
        let pinned = await client.post(url: "https://localhost:\(port)/hook", connectingTo: .v4(0x7F00_0002), headers: [], body: Array("{}".utf8))
        #expect(pinned.statusCode == 204, "\(pinned)")
        let byAddress = await client.post(url: "https://127.0.0.2:\(port)/hook", headers: [], body: Array("{}".utf8))
        #expect(byAddress.statusCode == nil && byAddress.errorKind == .tls, "a certificate for localhost does not hold for 127.0.0.2: \(byAddress)")
        await client.shutdown()
        #expect(Self.requests(listener) == ["host=localhost:\(port) sni=localhost"])
    }

    /// The answers a test's resolver gives, changed as the test goes.
    final class Answers: Sendable {
        private let addresses: Mutex<[IPAddress]>
        init(_ addresses: [IPAddress]) { self.addresses = Mutex(addresses) }
        var current: [IPAddress] { addresses.withLock { $0 } }
        func set(_ new: [IPAddress]) { addresses.withLock { $0 = new } }
    }

    /// DNS rebinding, end to end: the subscriber's name first answers an address the operator
    /// allowed (127.0.0.2, on ECHORELAY_PRIVATE_SUBSCRIBERS), then a loopback one (127.0.0.1,
    /// where another https listener waits). The first webhook reaches 127.0.0.2; once the check
    /// sees the new answer, the next is refused and its attempt says why, and nothing ever
    /// reaches 127.0.0.1.
    @Test func aNameThatChangesItsAnswerCannotLeadAWebhookInside() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rebinding-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await Self.certificates(in: folder, name: "hooks.example.com")
        let port = try freeLoopbackPort()
        let allowed = try await Self.listen(on: "127.0.0.2", port: port, certificates: folder)
        defer { allowed.signal(SIGKILL) }
        let inside = try await Self.listen(on: "127.0.0.1", port: port, certificates: folder)
        defer { inside.signal(SIGKILL) }

        let allowList = try PrivateSubscriberAllowList(parsing: "127.0.0.2")
        let answers = Answers([.v4(0x7F00_0002)])
        let lookUps = NameLookups(threads: 1) { _ in .addresses(answers.current) }
        let delivery = DeliveryConfiguration(
            timeout: .seconds(5), retrySchedule: [.seconds(60)], privateSubscribers: allowList,
            subscriberCAFile: folder.appendingPathComponent("ca.pem").path, nameLookups: lookUps
        )
        try await EchoFixture.run(delivery: delivery) { f in
            _ = try await f.subscribe(url: "https://hooks.example.com:\(port)/hook")
            let first = try await f.pushVerified("token.rotated", userID: "u-rebind", session: try f.session("u-rebind"))
            let firstID = try #require(first["id"] as? String)
            let delivered = try #require(try await f.finalDeliveries(of: firstID, count: 1).first)
            #expect(delivered["status"] as? String == "delivered")
            #expect(Self.requests(allowed) == ["host=hooks.example.com:\(port) sni=hooks.example.com"])

            answers.set([.v4(0x7F00_0001)])
            try await Task.sleep(for: AddressChecks.allowedFor + .milliseconds(500))  // the checked answer expires
            let second = try await f.pushVerified("token.rotated", userID: "u-rebind-2", session: try f.session("u-rebind-2"))
            let secondID = try #require(second["id"] as? String)
            let deadline = ContinuousClock.now + .seconds(20)
            var attempts: [[String: Any]] = []
            while attempts.isEmpty, ContinuousClock.now < deadline {
                attempts = (try await f.deliveries(of: secondID).first?["attempts"] as? [[String: Any]]) ?? []
                try await Task.sleep(for: .milliseconds(100))
            }
            let attempt = try #require(attempts.first)
            #expect(attempt["error_kind"] as? String == "refused_address")
            #expect(attempt["error"] as? String == "the subscriber's address points to a loopback address (127.0.0.0/8)")
            #expect(attempt["status_code"] is NSNull)
            #expect(Self.requests(inside).isEmpty, "nothing reached the loopback address")
            #expect(Self.requests(allowed).count == 1)
        }
        try await lookUps.shutdown()
    }
}
