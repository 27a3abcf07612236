import EchoRelayCore
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// Every cell of the OAuth 2 outcome table and every clause of the deactivation rule
/// (docs/identity-provider.md), end to end on both stores, against an authorization server
/// whose protocol handling is oauthlib's.
@Suite struct OAuth2VerificationTests {
    static let stores: [StoreKind] = [.postgres, .sqlite]

    func expectOutcome(_ json: [String: Any], _ status: String, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(json["status"] as? String == status, "\(json)", sourceLocation: sourceLocation)
        #expect(json["reason"] as? String == reason, "\(json)", sourceLocation: sourceLocation)
        #expect(json["path"] as? String == "oauth2", sourceLocation: sourceLocation)
    }

    @Test(arguments: stores)
    func aRotationWithTheUsersActiveTokenIsVerifiedDeliveredAndItsTokenErased(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let token = try await f.session("u-1")
            let id = try await f.push("token.rotated", userID: "u-1", token: token)
            let json = try await f.outcome(of: id)
            expectOutcome(json, "verified", "provider_confirmed")
            #expect((json["provider"] as? [String: Any])?["user_id"] as? String == "u-1")
            #expect(try await f.storedProof(of: id) == [nil, nil, nil], "the access token is erased with the outcome")
            #expect(try await f.user("u-1")?["state"] as? String == "active")
            let delivered = try await f.deliveries(of: id)
            #expect(delivered.first?.object?["user_id"]?.stringValue == "u-1")
            #expect(delivered.first?.signatureValid == true)

            // The request as RFC 7662 and RFC 6749 §2.3.1 ask, as oauthlib received it.
            let request = try #require(try await f.authorizationServer.requests().first)
            #expect(request.method == "POST" && request.path == "/introspect")
            #expect(request.headers["content-type"] == "application/x-www-form-urlencoded")
            #expect(request.form == ["token": token, "token_type_hint": "access_token"])
            let basic = try #require(request.headers["authorization"])
            let pair = String(decoding: try #require(Data(base64Encoded: String(basic.dropFirst("Basic ".count)))), as: UTF8.self)
            #expect(basic.hasPrefix("Basic "))
            // Each part form-encoded before base64: the secret's "/", "+", "=" and space are escaped.
            let parts = pair.split(separator: ":", omittingEmptySubsequences: false).map {
                $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }
            #expect(parts == [OAuth2Fixture.clientID, OAuth2Fixture.clientSecret])
            #expect(!pair.contains("/") && !pair.contains("+") && !pair.contains("=") && !pair.contains(" "))
        }
    }

    @Test(arguments: stores)
    func aPhoneChangeIsVerifiedOnlyWhenUserInfoShowsThatNumberVerified(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let token = try await f.session("u-2", phone: "+447700900123")
            let matching = try await f.push("phone.changed", userID: "u-2", phone: "+447700900123", token: token)
            let verified = try await f.outcome(of: matching)
            expectOutcome(verified, "verified", "provider_confirmed")
            #expect((verified["provider"] as? [String: Any])?["phone_number"] as? String == "+447700900123")
            let delivered = try await f.deliveries(of: matching)
            #expect(delivered.first?.object?["data"]?.objectValue?["phone_number"]?.stringValue == "+447700900123")
            #expect(try await f.user("u-2")?["phone_number"] as? String == "+447700900123")
            let userInfo = try await f.authorizationServer.requests().filter { $0.path == "/userinfo" }
            #expect(userInfo.map(\.method) == ["GET"])
            #expect(userInfo.first?.headers["authorization"] == "Bearer \(token)")

            let other = try await f.push("phone.changed", userID: "u-2", phone: "+447700900999", token: token)
            expectOutcome(try await f.outcome(of: other), "rejected", "phone_mismatch")

            try await f.authorizationServer.setAccount(user: "u-2", phoneNumber: "+447700900555", verified: false)
            let unverified = try await f.push("phone.changed", userID: "u-2", phone: "+447700900555", token: token)
            expectOutcome(try await f.outcome(of: unverified), "rejected", "phone_mismatch")
            // Only the first was delivered, and the user keeps the provider's verified number.
            #expect(f.subscriber.deliveries.filter { $0.object?["type"]?.stringValue == "phone.changed" }.count == 1)
            #expect(try await f.user("u-2")?["phone_number"] as? String == "+447700900123")
            #expect(try await f.storedProof(of: unverified) == [nil, nil, nil])
        }
    }

    @Test(arguments: stores)
    func anotherUsersTokenIsRejectedForEveryType(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let someoneElse = try await f.session("u-3", phone: "+15555550103")
            for type in ["token.rotated", "phone.changed", "account.deactivated"] {
                let json = try await f.pushed(type, userID: "u-4", phone: "+15555550103", token: someoneElse)
                expectOutcome(json, "rejected", "user_mismatch")
            }
            #expect(try await f.http.get("/v1/users/u-4", bearer: LiveServer.adminToken).status == 404)
        }
    }

    @Test(arguments: stores)
    func anotherClientsTokenIsRejectedForEveryType(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let token = try await f.session("u-5", phone: "+15555550105", clientID: "some-other-app")
            for type in ["token.rotated", "phone.changed", "account.deactivated"] {
                expectOutcome(try await f.pushed(type, userID: "u-5", phone: "+15555550105", token: token), "rejected", "wrong_client")
            }
        }
    }

    @Test(arguments: stores)
    func anotherIssuersTokenIsRejectedWhenTheIssuerIsSet(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store, issuer: "https://idp.test") { f in
            let ours = try await f.session("u-6")
            expectOutcome(try await f.pushed("token.rotated", userID: "u-6", token: ours), "verified", "provider_confirmed")
            let theirs = try await f.session("u-6", phone: "+15555550106", issuer: "https://elsewhere.test")
            for type in ["token.rotated", "phone.changed", "account.deactivated"] {
                expectOutcome(try await f.pushed(type, userID: "u-6", phone: "+15555550106", token: theirs), "rejected", "wrong_issuer")
            }
        }
    }

    @Test(arguments: stores)
    func anInactiveTokenRejectsRotationsAndPhoneChanges(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let token = try await f.session("u-7", phone: "+15555550107")
            try await f.authorizationServer.revoke(token)
            expectOutcome(try await f.pushed("token.rotated", userID: "u-7", token: token), "rejected", "token_inactive")
            expectOutcome(try await f.pushed("phone.changed", userID: "u-7", phone: "+15555550107", token: token), "rejected", "token_inactive")
        }
    }

    @Test(arguments: stores)
    func aDeactivationWhoseTokenIsActiveIsRejected(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let token = try await f.session("u-8")
            _ = try await f.pushed("token.rotated", userID: "u-8", token: token)
            let json = try await f.pushed("account.deactivated", userID: "u-8", token: token)
            expectOutcome(json, "rejected", "account_alive")
            #expect(try await f.user("u-8")?["state"] as? String == "active")
        }
    }

    @Test(arguments: stores)
    func aDeactivationWithAVerifiedTokenTheProviderRevokedIsVerifiedDeliveredAndDeactivates(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let token = try await f.session("u-9")
            _ = try await f.pushed("token.rotated", userID: "u-9", token: token)
            try await f.authorizationServer.revoke(token)
            let id = try await f.push("account.deactivated", userID: "u-9", token: token)
            expectOutcome(try await f.outcome(of: id), "verified", "known_token_inactive")
            #expect(try await f.user("u-9")?["state"] as? String == "deactivated")
            let delivered = try await f.deliveries(of: id)
            #expect(delivered.first?.object?["type"]?.stringValue == "account.deactivated")
            #expect(try await f.storedProof(of: id) == [nil, nil, nil])
        }
    }

    @Test(arguments: stores)
    func aDeactivationWithASupersededTokenIsRejected(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let old = try await f.session("u-10")
            _ = try await f.pushed("token.rotated", userID: "u-10", token: old)
            let new = try await f.session("u-10")
            _ = try await f.pushed("token.rotated", userID: "u-10", token: new)
            try await f.authorizationServer.revoke(old)
            expectOutcome(try await f.pushed("account.deactivated", userID: "u-10", token: old), "rejected", "superseded_token")
            #expect(try await f.user("u-10")?["state"] as? String == "active")
            // The newest token's death still proves the session ended.
            try await f.authorizationServer.revoke(new)
            expectOutcome(try await f.pushed("account.deactivated", userID: "u-10", token: new), "verified", "known_token_inactive")
        }
    }

    @Test(arguments: stores)
    func aDeactivationWithATokenThatMerelyRanOutIsRejected(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            // The token's 3 s start at its first introspection, not at its issue: on a slow
            // machine the rotation's verification once came after an exp counted from the issue.
            let token = try await f.authorizationServer.issueToken(user: "u-11", clientID: OAuth2Fixture.appClientID,
                                                                   expiresInFromFirstUse: 3)
            expectOutcome(try await f.pushed("token.rotated", userID: "u-11", token: token), "verified", "provider_confirmed")
            // The introspection came before the outcome, so its exp is less than 3 s from now.
            try await Task.sleep(for: .seconds(4))  // past the token's exp, on the real clock
            expectOutcome(try await f.pushed("account.deactivated", userID: "u-11", token: token), "rejected", "token_expired")
            #expect(try await f.user("u-11")?["state"] as? String == "active")
        }
    }

    @Test(arguments: stores)
    func aDeactivationWithAMadeUpTokenIsRejectedAndNothingDelivered(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let real = try await f.session("u-12")
            let rotation = try await f.push("token.rotated", userID: "u-12", token: real)
            _ = try await f.deliveries(of: rotation)
            let id = try await f.push("account.deactivated", userID: "u-12", token: "made-up-token-" + UUID().uuidString)
            let json = try await f.outcome(of: id)
            expectOutcome(json, "rejected", "unknown_token")
            #expect((json["deliveries"] as? [Any])?.isEmpty == true)
            try await Task.sleep(for: .milliseconds(500))
            #expect(f.subscriber.deliveries.allSatisfy { $0.object?["event_id"]?.stringValue != id })
            #expect(try await f.user("u-12")?["state"] as? String == "active")
        }
    }

    @Test(arguments: stores)
    func anOutageOfTheIntrospectionEndpointIsWaitedOut(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let token = try await f.session("u-13", phone: "+15555550113")
            try await f.authorizationServer.outage(3, status: 503)
            let id = try await f.push("token.rotated", userID: "u-13", token: token)
            expectOutcome(try await f.outcome(of: id), "verified", "provider_confirmed")
            #expect(try await f.authorizationServer.requests().count == 4, "three 503s, then the answer")
            _ = try await f.deliveries(of: id)

            // 429, a connection closed with no answer, and a timeout are waited out the same way.
            try await f.authorizationServer.outage(1, status: 429)
            expectOutcome(try await f.pushed("phone.changed", userID: "u-13", phone: "+15555550113", token: token), "verified", "provider_confirmed")
            try await f.authorizationServer.outage(1, status: nil, drop: true)
            expectOutcome(try await f.pushed("token.rotated", userID: "u-13", token: token), "verified", "provider_confirmed")
        }
    }

    @Test(arguments: stores)
    func aSlowAuthorizationServerIsTimedOutAndAskedAgain(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store, timeout: .seconds(1)) { f in
            let token = try await f.session("u-14")
            try await f.authorizationServer.outage(1, status: 503, delay: 3)
            expectOutcome(try await f.pushed("token.rotated", userID: "u-14", token: token), "verified", "provider_confirmed")
        }
    }

    @Test(arguments: stores)
    func refusedClientCredentialsAreRetriedThenTheEventIsUnverifiable(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store, clientSecret: "not-the-secret") { f in
            let token = try await f.session("u-15")
            for type in ["token.rotated", "account.deactivated"] {
                expectOutcome(try await f.pushed(type, userID: "u-15", token: token), "unverifiable", "client_refused")
            }
            // Each event was tried once and retried on every delay of the schedule.
            #expect(try await f.authorizationServer.requests().count == 8)
        }
    }

    @Test(arguments: stores)
    func anUnverifiableEventIsReverifiedWithAFreshAccessToken(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let token = try await f.session("u-16")
            try await f.authorizationServer.outage(4, status: 503)
            let id = try await f.push("token.rotated", userID: "u-16", token: token)
            expectOutcome(try await f.outcome(of: id), "unverifiable", "provider_unavailable")

            let fresh = try await f.session("u-16")
            let body = try JSONSerialization.data(withJSONObject: ["reason": "the provider is back", "oauth2": ["access_token": fresh]])
            let answer = try await f.http.send(.POST, "/v1/events/\(id)/reverify", headers: [
                ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
            ], body: Array(body))
            #expect(answer.status == 202, "\(answer.text)")
            expectOutcome(try await f.outcome(of: id), "verified", "provider_confirmed")
            #expect(try await f.authorizationServer.requests().last?.form["token"] == fresh)
            #expect(try await f.storedProof(of: id) == [nil, nil, nil])
            _ = try await f.deliveries(of: id)
        }
    }
}
