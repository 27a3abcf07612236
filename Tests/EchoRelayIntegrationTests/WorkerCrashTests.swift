import EchoRelayCore
import Foundation
import NIOHTTP1
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Work lives in the database: a `serve` process killed in the middle of an echo request
/// loses its lease, and another process finishes the event once the lease runs out.
@Suite struct WorkerCrashTests {
    @Test func aWorkerKilledMidItemIsFinishedByAnotherAfterTheLease() async throws {
        let provider = StandInProvider()
        provider.addConsumer(key: EchoFixture.consumerKey, secret: EchoFixture.consumerSecret)
        provider.addAccount(userID: "4242", phoneNumber: nil)
        let session = provider.issueToken(for: "4242")
        try await provider.run { provider in
            try await TestDatabase.withFresh { database in
                let environment = [
                    "ECHORELAY_DATABASE_URL": database.url, "ECHORELAY_INGEST_SECRETS": LiveServer.ingestSecret,
                    "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken, "ECHORELAY_CONSUMER_KEY": EchoFixture.consumerKey,
                    "ECHORELAY_ECHO_ALLOWED_HOSTS": provider.host, "ECHORELAY_ECHO_ALLOW_HTTP": "1",
                    "ECHORELAY_ECHO_TIMEOUT": "2s", "ECHORELAY_DELIVERY_TIMEOUT": "2s", "ECHORELAY_LEASE": "3s", "ECHORELAY_LOG_LEVEL": "error",
                ]
                provider.setMode(.hang)
                let firstPort = try freeLoopbackPort()
                let first = try ChildProcess(["serve", "--port", String(firstPort)], environment: environment)
                let firstHTTP = HTTPTestClient(port: firstPort)
                try await first.waitUntilAnswering(firstHTTP)

                let url = provider.digitsURL
                let header = try OAuth1.authorizationHeader(
                    method: "GET", url: url, consumerKey: EchoFixture.consumerKey, consumerSecret: EchoFixture.consumerSecret,
                    token: session.token, tokenSecret: session.secret, nonce: "n1", timestamp: String(Int(Date().timeIntervalSince1970))
                )
                let body = eventBody(id: "evt_crash", userID: "4242") { $0["echo"] = ["service_provider": url, "authorization": header] }
                let signer = EventSigner(secret: LiveServer.ingestSecret)
                #expect(try await firstHTTP.send(.POST, "/v1/events", headers: try signer.headers(for: body), body: body).status == 202)

                // Wait until the first process is mid-request, then kill it without warning.
                let deadline = ContinuousClock.now + .seconds(20)
                while provider.requests.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
                #expect(provider.requests.count == 1)
                first.signal(SIGKILL)
                try await first.wait()
                provider.setMode(.normal)

                let secondPort = try freeLoopbackPort()
                let second = try ChildProcess(["serve", "--port", String(secondPort)], environment: environment)
                defer { second.signal(SIGKILL) }
                let secondHTTP = HTTPTestClient(port: secondPort)
                try await second.waitUntilAnswering(secondHTTP)

                var status = "pending"
                let finishDeadline = ContinuousClock.now + .seconds(30)
                while status == "pending", ContinuousClock.now < finishDeadline {
                    status = try await secondHTTP.get("/v1/events/evt_crash", bearer: LiveServer.adminToken).json?["status"] as? String ?? "pending"
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(status == "verified")
                #expect(provider.requests.count == 2, "the second process asked the provider once more")
            }
        }
    }
}
