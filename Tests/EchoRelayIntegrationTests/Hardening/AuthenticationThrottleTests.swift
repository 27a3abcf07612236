import EchoRelayCore
@testable import EchoRelayHTTP
import EchoRelayServer
import Foundation
import NIOHTTP1
import TestSupport
import Testing

/// Guessing is slow and seen: past `ECHORELAY_AUTH_FAILURE_LIMIT` failed authentications in a
/// minute, an address is answered `429` with `Retry-After` whatever it presents, and the
/// failures and refusals are counted in `/metrics`.
@Suite struct AuthenticationThrottleTests {
    static let wrongToken = "er_" + String(repeating: "W", count: 43)

    @Test(arguments: [StoreKind.postgres, .sqlite])
    func failedBearerTokensPastTheLimitAreAnswered429AndCounted(store: StoreKind) async throws {
        try await HardeningServer.withStore(store) { url in
            try await HardeningServer.run(databaseURL: url, configure: { $0.authenticationFailureLimit = 3 }) { http in
                #expect(try await http.get("/v1/subscriptions", bearer: LiveServer.adminToken).status == 200)
                for _ in 0..<3 {
                    #expect(try await http.get("/v1/subscriptions", bearer: Self.wrongToken).status == 401)
                }
                let throttled = try await http.get("/v1/subscriptions", bearer: LiveServer.adminToken)
                #expect(throttled.status == 429, "past the limit, even the right token waits: \(throttled.status)")
                let wait = Int(try #require(throttled.headers["Retry-After"].first)) ?? 0
                #expect((1...60).contains(wait), "Retry-After: \(wait)")
                #expect((throttled.json?["type"] as? String) == "urn:echorelay:problem:too-many-authentication-failures")

                // Requests without a credential are neither counted nor stopped, nor are those
                // to operations that take no bearer token, whatever header they carry.
                #expect(try await http.get("/healthz").status == 200)
                #expect(try await http.get("/v1/subscriptions").status == 401)
                for path in ["/", "/healthz", "/readyz", "/openapi.yaml"] {
                    #expect(try await http.get(path, bearer: Self.wrongToken).status == 200, "\(path)")
                }
                let event = eventBody(id: "evt_with_a_stray_bearer")
                var headers = try EventSigner(secret: LiveServer.ingestSecret).headers(for: event)
                headers.append(("Authorization", "Bearer \(Self.wrongToken)"))
                #expect(try await http.send(.POST, "/v1/events", headers: headers, body: event).status == 202, "signed ingest is no bearer attempt")

                let metrics = String(decoding: try await http.get("/metrics").body, as: UTF8.self)
                #expect(metrics.contains(#"echorelay_authentication_failures_total{kind="bearer",result="failed"} 3"#), "\(metrics)")
                #expect(metrics.contains(#"echorelay_authentication_failures_total{kind="bearer",result="throttled"} 1"#))
            }
        }
    }

    @Test func refusedConsoleSignInsCountTowardTheSameLimit() async throws {
        try await HardeningServer.withStore(.postgres) { url in
            try await HardeningServer.run(databaseURL: url, configure: { $0.authenticationFailureLimit = 2 }) { http in
                let browser = ConsoleBrowser(port: http.port)
                #expect(try await browser.signIn(token: Self.wrongToken).status == 401)
                #expect(try await browser.signIn(token: "not even a token").status == 401)
                #expect(try await browser.signIn(token: LiveServer.adminToken).status == 429)
                let metrics = String(decoding: try await http.get("/metrics").body, as: UTF8.self)
                #expect(metrics.contains(#"echorelay_authentication_failures_total{kind="console",result="failed"} 2"#), "\(metrics)")
                #expect(metrics.contains(#"echorelay_authentication_failures_total{kind="console",result="throttled"} 1"#))
            }
        }
    }

    /// Behind a trusted proxy each forwarded client has its own count; from anyone else,
    /// `X-Forwarded-For` is ignored, so a guesser cannot spread its failures over made-up addresses.
    @Test(arguments: [true, false])
    func forwardedAddressesCountOnlyFromATrustedProxy(trusted: Bool) async throws {
        let proxies: [AddressRange] = trusted ? [try AddressRange("127.0.0.0/8")] : []
        try await HardeningServer.withStore(.postgres) { url in
            try await HardeningServer.run(databaseURL: url, configure: { $0.authenticationFailureLimit = 2; $0.trustedProxies = proxies }) { http in
                for _ in 0..<2 {
                    let failed = try await Self.attempt(http, from: "203.0.113.1", Self.wrongToken)
                    #expect(failed == 401)
                }
                let held = try await Self.attempt(http, from: "203.0.113.1", LiveServer.adminToken)
                #expect(held == 429)
                let other = try await Self.attempt(http, from: "203.0.113.2", LiveServer.adminToken)
                #expect(other == (trusted ? 200 : 429),
                        trusted ? "another client behind the proxy is not held back" : "a forged header is no new address")
            }
        }
    }

    static func attempt(_ http: HTTPTestClient, from client: String, _ token: String) async throws -> Int {
        try await http.send(.GET, "/v1/subscriptions", headers: [
            ("Authorization", "Bearer \(token)"), ("X-Forwarded-For", "198.51.100.9, \(client)"),
        ]).status
    }

    @Test func aWindowEndsAfterAMinuteAndTheCountStartsAgain() {
        let throttle = AuthenticationThrottle(limit: 2)
        let start = ContinuousClock.now
        throttle.recordFailure(from: "a", now: start)
        throttle.recordFailure(from: "a", now: start + .seconds(1))
        #expect(throttle.refusal(for: "a", now: start + .seconds(2)) == .seconds(58))
        #expect(throttle.refusal(for: "b", now: start + .seconds(2)) == nil)
        #expect(throttle.refusal(for: "a", now: start + .seconds(60)) == nil)
        throttle.recordFailure(from: "a", now: start + .seconds(61))
        #expect(throttle.refusal(for: "a", now: start + .seconds(62)) == nil, "one failure in the new window")
    }
}
