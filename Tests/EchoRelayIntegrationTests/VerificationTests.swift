import EchoRelayCore
import EchoRelayStandIns
import Foundation
import Logging
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// Every cell of the outcome table (docs/identity-provider.md), against a stand-in provider that checks real
/// OAuth 1.0a signatures.
@Suite struct VerificationTests {
    func expectOutcome(_ json: [String: Any], _ status: String, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(json["status"] as? String == status, sourceLocation: sourceLocation)
        #expect(json["reason"] as? String == reason, sourceLocation: sourceLocation)
        #expect(json["decided_at"] is String, sourceLocation: sourceLocation)
    }

    @Test func aRotationConfirmedByTheProviderIsVerifiedAndItsCredentialsErased() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "1001", phoneNumber: "+15555550100")
            let session = f.provider.issueToken(for: "1001")
            let id = try await f.push("token.rotated", userID: "1001", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            let json = try await f.outcome(of: id)
            expectOutcome(json, "verified", "provider_confirmed")
            #expect(json["verified_at"] is String)
            let provider = try #require(json["provider"] as? [String: Any])
            #expect(provider["user_id"] as? String == "1001")
            #expect(provider["phone_number"] as? String == "+15555550100")
            #expect(try await f.storedEcho(of: id) == (nil, nil))
            #expect(f.provider.requests.count == 1)
            #expect(f.provider.requests.first?.method == "GET")

            let user = try #require(try await f.user("1001").json)
            #expect(user["state"] as? String == "active")
            #expect(user["phone_number"] as? String == "+15555550100")
            #expect(user["last_sequence"] as? Int == 1)
        }
    }

    @Test func twitterShapedAnswersAreAcceptedToo() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "2002", phoneNumber: nil)
            let session = f.provider.issueToken(for: "2002")
            let echo = try f.echo(token: session.token, tokenSecret: session.secret, url: f.provider.twitterURL)
            expectOutcome(try await f.outcome(of: try await f.push("token.rotated", userID: "2002", echo: echo)), "verified", "provider_confirmed")
        }
    }

    @Test func extraSignedQueryParametersReachTheProvider() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "3003", phoneNumber: nil)
            let session = f.provider.issueToken(for: "3003")
            let url = f.provider.digitsURL + "?app_session=abc%20123&x=1"
            let id = try await f.push("token.rotated", userID: "3003", echo: try f.echo(token: session.token, tokenSecret: session.secret, url: url))
            expectOutcome(try await f.outcome(of: id), "verified", "provider_confirmed")
            #expect(f.provider.requests.first?.uri == "/1.1/sdk/account.json?app_session=abc%20123&x=1")
        }
    }

    @Test func aPhoneChangeIsVerifiedOnlyIfTheProviderHasThatNumber() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "4004", phoneNumber: "+447700900123")
            let session = f.provider.issueToken(for: "4004")
            let matching = try await f.push("phone.changed", userID: "4004", phone: "+447700900123",
                                            echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: matching), "verified", "provider_confirmed")
            let other = try await f.push("phone.changed", userID: "4004", phone: "+447700900999",
                                         echo: try f.echo(token: session.token, tokenSecret: session.secret))
            let rejected = try await f.outcome(of: other)
            expectOutcome(rejected, "rejected", "phone_mismatch")
            #expect(rejected["verified_at"] is NSNull)
            #expect(try await f.storedEcho(of: other) == (nil, nil))
            // The user keeps the provider's number, never the pushed one.
            #expect(try await f.user("4004").json?["phone_number"] as? String == "+447700900123")
        }
    }

    @Test(arguments: ["token.rotated", "phone.changed", "account.deactivated"])
    func anAnswerForAnotherUserIsRejected(type: String) async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "5005", phoneNumber: "+15555550105")
            let someoneElse = f.provider.issueToken(for: "5005")
            let id = try await f.push(type, userID: "5006", phone: "+15555550105",
                                      echo: try f.echo(token: someoneElse.token, tokenSecret: someoneElse.secret))
            let json = try await f.outcome(of: id)
            expectOutcome(json, "rejected", "user_mismatch")
            #expect(try await f.user("5006").status == 404)
        }
    }

    @Test(arguments: ["token.rotated", "phone.changed"])
    func aDeadTokenRejectsRotationsAndPhoneChanges(type: String) async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "6006", phoneNumber: "+15555550106")
            let session = f.provider.issueToken(for: "6006")
            f.provider.expire(token: session.token)
            let id = try await f.push(type, userID: "6006", phone: "+15555550106", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: id), "rejected", "token_invalid")
        }
    }

    @Test func aDeactivationOfALiveAccountIsRejected() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "7007", phoneNumber: "+15555550107")
            let session = f.provider.issueToken(for: "7007")
            _ = try await f.outcome(of: try await f.push("token.rotated", userID: "7007", echo: try f.echo(token: session.token, tokenSecret: session.secret)))
            let id = try await f.push("account.deactivated", userID: "7007", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: id), "rejected", "account_active")
            #expect(try await f.user("7007").json?["state"] as? String == "active")
        }
    }

    @Test func aDeactivationWithAMadeUpTokenIsRejected() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "8008", phoneNumber: nil)
            let real = f.provider.issueToken(for: "8008")
            _ = try await f.outcome(of: try await f.push("token.rotated", userID: "8008", echo: try f.echo(token: real.token, tokenSecret: real.secret)))
            let id = try await f.push("account.deactivated", userID: "8008", echo: try f.echo(token: "made-up-token", tokenSecret: "made-up-secret"))
            expectOutcome(try await f.outcome(of: id), "rejected", "unknown_token")
            #expect(try await f.user("8008").json?["state"] as? String == "active")
        }
    }

    @Test func aDeactivationWithAWrongTokenSecretIsRejected() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "9009", phoneNumber: nil)
            let session = f.provider.issueToken(for: "9009")
            _ = try await f.outcome(of: try await f.push("token.rotated", userID: "9009", echo: try f.echo(token: session.token, tokenSecret: session.secret)))
            f.provider.expire(token: session.token)
            let id = try await f.push("account.deactivated", userID: "9009", echo: try f.echo(token: session.token, tokenSecret: "not-the-secret"))
            expectOutcome(try await f.outcome(of: id), "rejected", "bad_signature")
            #expect(try await f.user("9009").json?["state"] as? String == "active")
        }
    }

    @Test func aDeactivationWhoseVerifiedTokenHasDiedIsVerified() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "1010", phoneNumber: "+15555550110")
            let session = f.provider.issueToken(for: "1010")
            _ = try await f.outcome(of: try await f.push("token.rotated", userID: "1010", echo: try f.echo(token: session.token, tokenSecret: session.secret)))
            f.provider.expire(token: session.token)
            let id = try await f.push("account.deactivated", userID: "1010", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            let json = try await f.outcome(of: id)
            expectOutcome(json, "verified", "known_token_expired")
            let user = try #require(try await f.user("1010").json)
            #expect(user["state"] as? String == "deactivated")
            #expect(user["last_sequence"] as? Int == 2)
            #expect(user["phone_number"] as? String == "+15555550110")
        }
    }

    @Test func aTokenVerifiedForAnotherUserDoesNotProveADeactivation() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "1111", phoneNumber: nil)
            f.provider.addAccount(userID: "1112", phoneNumber: nil)
            let session = f.provider.issueToken(for: "1111")
            _ = try await f.outcome(of: try await f.push("token.rotated", userID: "1111", echo: try f.echo(token: session.token, tokenSecret: session.secret)))
            f.provider.expire(token: session.token)
            let id = try await f.push("account.deactivated", userID: "1112", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: id), "rejected", "unknown_token")
        }
    }

    @Test(arguments: [
        (StandInProvider.Mode.respond(status: 403, body: #"{"errors":[{"code":64,"message":"suspended"}]}"#), "forbidden"),
        (.respond(status: 404, body: "{}"), "provider_refused"),
        (.respond(status: 401, body: "{}"), "not_authenticated"),
        (.respond(status: 200, body: "<html>not json</html>"), "unreadable_response"),
        (.respond(status: 200, body: String(repeating: " ", count: 70_000) + #"{"id_str":"1212"}"#), "unreadable_response"),
        (.redirect, "redirected"),
    ])
    func refusalsFromTheProviderReject(mode: StandInProvider.Mode, reason: String) async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "1212", phoneNumber: nil)
            let session = f.provider.issueToken(for: "1212")
            f.provider.setMode(mode)
            let id = try await f.push("token.rotated", userID: "1212", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: id), "rejected", reason)
            #expect(f.provider.requests.count == 1, "a refusal is final: no retry, no redirect followed")
            #expect(try await f.storedEcho(of: id) == (nil, nil))
        }
    }

    @Test func aStaleTimestampIsUnverifiableWithoutRetrying() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "1313", phoneNumber: nil)
            let session = f.provider.issueToken(for: "1313")
            let stale = try f.echo(token: session.token, tokenSecret: session.secret, timestamp: Date().addingTimeInterval(-600))
            let id = try await f.push("token.rotated", userID: "1313", echo: stale)
            expectOutcome(try await f.outcome(of: id), "unverifiable", "timestamp_out_of_window")
            #expect(f.provider.requests.count == 1)
            #expect(try await f.storedEcho(of: id) == (nil, nil))
        }
    }

    @Test(arguments: [500, 503, 429])
    func anOutageIsRetriedOnTheScheduleThenUnverifiable(status: Int) async throws {
        try await EchoFixture.run(retrySchedule: [.milliseconds(100), .milliseconds(100), .milliseconds(100)]) { f in
            f.provider.addAccount(userID: "1414", phoneNumber: nil)
            let session = f.provider.issueToken(for: "1414")
            f.provider.setMode(.respond(status: status, body: "{}"))
            let id = try await f.push("token.rotated", userID: "1414", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: id), "unverifiable", "provider_unavailable")
            #expect(f.provider.requests.count == 4, "3 delays mean 3 retries, 4 tries")
            #expect(try await f.storedEcho(of: id) == (nil, nil))
        }
    }

    @Test func aProviderThatHangsIsTimedOutAndRetried() async throws {
        // The timeout leaves a loaded machine time to get each try to the provider before it
        // is given up; with 500 ms, CI's sometimes never arrived.
        try await EchoFixture.run(retrySchedule: [.milliseconds(100)], timeout: .seconds(2)) { f in
            f.provider.addAccount(userID: "1515", phoneNumber: nil)
            let session = f.provider.issueToken(for: "1515")
            f.provider.setMode(.hang)
            let id = try await f.push("token.rotated", userID: "1515", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: id), "unverifiable", "provider_unavailable")
            #expect(try await f.provider.waitForRequests(count: 2, within: .seconds(10)).count == 2)
        }
    }

    @Test func aProviderThatNeverFinishesItsAnswerIsTimedOutAndRetried() async throws {
        // The status arrives at once and the body never ends: the timeout covers the body too.
        try await EchoFixture.run(retrySchedule: [.milliseconds(100)], timeout: .seconds(2)) { f in
            f.provider.addAccount(userID: "1520", phoneNumber: nil)
            let session = f.provider.issueToken(for: "1520")
            f.provider.setMode(.trickle)
            let id = try await f.push("token.rotated", userID: "1520", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: id), "unverifiable", "provider_unavailable")
            #expect(try await f.provider.waitForRequests(count: 2, within: .seconds(10)).count == 2)
            f.provider.setMode(.normal)
        }
    }

    @Test func aProviderOutageFollowedByRecoveryEndsVerified() async throws {
        try await EchoFixture.run(retrySchedule: [.milliseconds(100), .milliseconds(200), .milliseconds(300)]) { f in
            f.provider.addAccount(userID: "1616", phoneNumber: nil)
            let session = f.provider.issueToken(for: "1616")
            f.provider.failNext(2, status: 503)
            let id = try await f.push("token.rotated", userID: "1616", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: id), "verified", "provider_confirmed")
            #expect(f.provider.requests.count == 3)
        }
    }

    @Test func anUnreachableProviderIsRetriedThenUnverifiable() async throws {
        try await withRefusingLoopbackPort { closedPort in
            try await EchoFixture.run(retrySchedule: [.milliseconds(50), .milliseconds(50)], allowedHosts: ["127.0.0.1:\(closedPort)"]) { f in
                let echo = try f.echo(token: "t", tokenSecret: "s", url: "http://127.0.0.1:\(closedPort)/1.1/sdk/account.json")
                let id = try await f.push("token.rotated", userID: "1717", echo: echo)
                expectOutcome(try await f.outcome(of: id), "unverifiable", "provider_unavailable")
            }
        }
    }

    @Test func refusalsBeforeTheRequestSendNothingAnywhere() async throws {
        try await EchoFixture.run { f in
            f.provider.addAccount(userID: "1818", phoneNumber: nil)
            let session = f.provider.issueToken(for: "1818")
            let good = try f.echo(token: session.token, tokenSecret: session.secret)
            let header = good["authorization"]!
            let cases: [([String: String], String)] = [
                (["service_provider": "http://127.0.0.1.evil.tld:\(f.provider.port)/1.1/sdk/account.json", "authorization": header], "host_not_allowed"),
                (["service_provider": "http://user@\(f.provider.host)/1.1/sdk/account.json", "authorization": header], "invalid_url"),
                (["service_provider": f.provider.digitsURL, "authorization": "OAuth oauth_token=\"unterminated"], "invalid_authorization"),
                (try f.echo(token: session.token, tokenSecret: session.secret, consumerKey: "another-app"), "consumer_key_mismatch"),
                (["service_provider": f.provider.digitsURL, "authorization": header.replacingOccurrences(of: "HMAC-SHA1", with: "RSA-SHA1")], "unsupported_signature_method"),
            ]
            for (echo, reason) in cases {
                let json = try await f.outcome(of: try await f.push("token.rotated", userID: "1818", echo: echo))
                #expect(json["status"] as? String == "rejected")
                if reason != "rejected" { #expect(json["reason"] as? String == reason) }
            }
            #expect(f.provider.requests.isEmpty, "a refused echo must not reach the provider")
        }
    }

    @Test func anOlderEventVerifiedLateDoesNotOverwriteANewerState() async throws {
        try await EchoFixture.run(retrySchedule: [.milliseconds(1500)]) { f in
            f.provider.addAccount(userID: "1919", phoneNumber: "+15555550119")
            let session = f.provider.issueToken(for: "1919")
            f.provider.failNext(1)  // the first event's first try fails, so it is verified last
            let older = try await f.push("phone.changed", userID: "1919", phone: "+15555550119", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            // The older's first try has failed before the newer is pushed (not 300 ms later and hoped so).
            _ = try await f.provider.waitForRequests(count: 1, within: .seconds(30))
            f.provider.addAccount(userID: "1919", phoneNumber: "+15555550120")
            let newer = try await f.push("phone.changed", userID: "1919", phone: "+15555550120", echo: try f.echo(token: session.token, tokenSecret: session.secret))
            expectOutcome(try await f.outcome(of: newer), "verified", "provider_confirmed")
            let late = try await f.outcome(of: older)
            // Its answer now carries the new number, so the older event is rejected or verified —
            // either way the state stays with sequence 2.
            #expect(late["status"] as? String != "pending")
            let user = try #require(try await f.user("1919").json)
            #expect(user["last_sequence"] as? Int == 2)
            #expect(user["phone_number"] as? String == "+15555550120")
        }
    }

    @Test func credentialsNeverReachTheLogs() async throws {
        let logs = LogCapture()
        try await EchoFixture.run(retrySchedule: [.milliseconds(50)], logger: logs.logger) { f in
            f.provider.addAccount(userID: "2020", phoneNumber: "+15555550120")
            let session = f.provider.issueToken(for: "2020")
            let echo = try f.echo(token: session.token, tokenSecret: session.secret)
            _ = try await f.outcome(of: try await f.push("token.rotated", userID: "2020", echo: echo))
            f.provider.setMode(.respond(status: 500, body: "{}"))
            _ = try await f.outcome(of: try await f.push("token.rotated", userID: "2020", echo: echo))
            _ = try await f.outcome(of: try await f.push("token.rotated", userID: "2020", echo: ["service_provider": f.provider.digitsURL, "authorization": "OAuth broken=\"" + session.token]))
            let signature = try #require(OAuthAuthorizationHeader.parse(echo["authorization"]!).signature)
            let text = logs.text
            #expect(!text.isEmpty)
            for secret in [session.token, session.secret, EchoFixture.consumerSecret, signature, echo["authorization"]!, LiveServer.ingestSecret, LiveServer.adminToken] {
                #expect(!text.contains(secret), "a credential reached the logs")
            }
        }
    }
}
