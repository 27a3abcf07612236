import EchoRelayCore
import Foundation
import Testing

/// Every cell of the OAuth 2 outcome table in docs/identity-provider.md, one answer at a time.
@Suite struct OAuth2OutcomeRulesTests {
    static let policy = OAuth2Policy(tokenClientID: "app", issuer: "https://idp.example")
    static let hash = Array(repeating: UInt8(9), count: 32)
    static let exp = 1_900_000_000

    static func task(_ type: EventType, phone: String? = "+15555550100") -> VerificationTask {
        VerificationTask(workItemID: 1, eventID: "e", type: type, userID: "42", sequence: 3, occurredAt: Date(),
                         pushedPhoneNumber: phone, echo: nil, oauth2: OAuth2Credentials(accessToken: Secret("t")), attempts: 1)
    }

    static func answer(_ status: Int, _ json: String) -> ProviderAnswer { .response(status: status, body: Array(json.utf8)) }

    static func active(sub: String = "42", client: String = "app", iss: String = "https://idp.example", extra: String = "") -> ProviderAnswer {
        answer(200, #"{"active":true,"sub":"\#(sub)","client_id":"\#(client)","iss":"\#(iss)","exp":\#(exp)\#(extra)}"#)
    }

    static func introspect(_ type: EventType, _ answer: ProviderAnswer, policy: OAuth2Policy = policy) -> OAuth2OutcomeRules.Introspected {
        OAuth2OutcomeRules.introspection(answer, task: task(type), policy: policy)
    }

    static func rejected(_ reason: VerificationReason) -> OAuth2OutcomeRules.Introspected { .decided(.final(.rejected(reason))) }

    @Test(arguments: EventType.allCases)
    func anActiveTokenOfTheUserAndClientIsConfirmedWithItsExpiry(type: EventType) {
        #expect(Self.introspect(type, Self.active()) == .confirmed(expiresAt: Date(timeIntervalSince1970: TimeInterval(Self.exp))))
        #expect(Self.introspect(type, Self.answer(200, #"{"active":true,"sub":"42","client_id":"app","iss":"https://idp.example"}"#))
            == .confirmed(expiresAt: nil))
        // Without a configured issuer, any issuer (or none) is taken.
        #expect(Self.introspect(type, Self.answer(200, #"{"active":true,"sub":"42","client_id":"app"}"#),
                                policy: OAuth2Policy(tokenClientID: "app")) == .confirmed(expiresAt: nil))
    }

    @Test(arguments: EventType.allCases)
    func anotherUsersClientsOrIssuersTokenIsRejected(type: EventType) {
        #expect(Self.introspect(type, Self.active(sub: "43"))
            == .decided(.final(VerificationOutcome(status: .rejected, reason: .userMismatch, providerUserID: "43"))))
        #expect(Self.introspect(type, Self.answer(200, #"{"active":true,"client_id":"app","iss":"https://idp.example"}"#))
            == Self.rejected(.userMismatch))
        #expect(Self.introspect(type, Self.active(client: "other-app")) == Self.rejected(.wrongClient))
        #expect(Self.introspect(type, Self.answer(200, #"{"active":true,"sub":"42","iss":"https://idp.example"}"#)) == Self.rejected(.wrongClient))
        #expect(Self.introspect(type, Self.active(iss: "https://elsewhere.example")) == Self.rejected(.wrongIssuer))
        // The client is checked before the user: another client's subject means nothing here.
        #expect(Self.introspect(type, Self.active(sub: "43", client: "other-app")) == Self.rejected(.wrongClient))
    }

    @Test(arguments: EventType.allCases)
    func anInactiveTokenIsInactive(type: EventType) {
        #expect(Self.introspect(type, Self.answer(200, #"{"active":false}"#)) == .inactive)
    }

    @Test(arguments: EventType.allCases)
    func refusalsOfOurCredentialsAreRetriedThenClientRefused(type: EventType) {
        for status in [401, 403] {
            #expect(Self.introspect(type, Self.answer(status, #"{"error":"invalid_client"}"#)) == .decided(.retryOrGiveUp(.clientRefused)))
        }
        #expect(Self.introspect(type, Self.answer(400, #"{"error":"invalid_client"}"#)) == .decided(.retryOrGiveUp(.clientRefused)))
    }

    @Test(arguments: EventType.allCases)
    func outagesAreRetried(type: EventType) {
        for status in [500, 502, 503, 429] {
            #expect(Self.introspect(type, Self.answer(status, "")) == .decided(.retry))
        }
        #expect(Self.introspect(type, .noAnswer("timed out")) == .decided(.retry))
    }

    @Test func otherAnswersAreRejected() {
        #expect(Self.introspect(.tokenRotated, Self.answer(302, "")) == Self.rejected(.redirected))
        #expect(Self.introspect(.tokenRotated, Self.answer(400, #"{"error":"invalid_request"}"#)) == Self.rejected(.providerRefused))
        #expect(Self.introspect(.tokenRotated, Self.answer(404, "")) == Self.rejected(.providerRefused))
        for body in ["", "not json", "[]", #"{"active":"true"}"#, #"{"sub":"42"}"#, #"{"active":true,"sub":"42","client_id":"app","exp":"soon"}"#] {
            #expect(Self.introspect(.tokenRotated, Self.answer(200, body)) == Self.rejected(.unreadableResponse), "\(body)")
        }
    }

    @Test func aConfirmedTokenVerifiesARotationAndRejectsADeactivation() {
        let expiry = Date(timeIntervalSince1970: 1_900_000_000)
        let rotated = OAuth2OutcomeRules.confirmed(task: Self.task(.tokenRotated), tokenHash: Self.hash, expiresAt: expiry)
        #expect(rotated == VerificationOutcome(status: .verified, reason: .providerConfirmed, providerUserID: "42",
                                               confirmedTokenHash: Self.hash, confirmedTokenExpiry: expiry))
        let alive = OAuth2OutcomeRules.confirmed(task: Self.task(.accountDeactivated), tokenHash: Self.hash, expiresAt: expiry)
        #expect(alive.status == .rejected && alive.reason == .accountAlive && alive.confirmedTokenHash == Self.hash)
    }

    static func phone(_ answer: ProviderAnswer, pushed: String = "+15555550100") -> VerificationDecision {
        OAuth2OutcomeRules.phone(userInfo: answer, task: task(.phoneChanged, phone: pushed), tokenHash: hash, expiresAt: nil)
    }

    @Test func aPhoneChangeIsVerifiedOnlyByUserInfoShowingThatNumberVerified() throws {
        let shown = Self.answer(200, #"{"sub":"42","phone_number":"+15555550100","phone_number_verified":true}"#)
        guard case .final(let verified) = Self.phone(shown) else { Issue.record("not final"); return }
        #expect(verified.status == .verified && verified.reason == .providerConfirmed)
        #expect(verified.providerUserID == "42" && verified.providerPhoneNumber == "+15555550100" && verified.confirmedTokenHash == Self.hash)

        for body in [#"{"sub":"42","phone_number":"+15555550199","phone_number_verified":true}"#,
                     #"{"sub":"42","phone_number":"+15555550100","phone_number_verified":false}"#,
                     #"{"sub":"42","phone_number":"+15555550100"}"#,
                     #"{"sub":"42"}"#, #"{"sub":"43","phone_number":"+15555550100","phone_number_verified":true}"#, "eyJhbGciOi.x.y"] {
            guard case .final(let outcome) = Self.phone(Self.answer(200, body)) else { Issue.record("not final: \(body)"); continue }
            #expect(outcome.status == .rejected && outcome.reason == .phoneMismatch, "\(body)")
        }
        for status in [401, 403, 404] {
            guard case .final(let outcome) = Self.phone(Self.answer(status, "")) else { Issue.record("not final: \(status)"); continue }
            #expect(outcome.reason == .phoneMismatch)
        }
    }

    @Test func anotherUsersNumberIsNeverKept() {
        let other = Self.answer(200, #"{"sub":"43","phone_number":"+15555550100","phone_number_verified":true}"#)
        guard case .final(let outcome) = Self.phone(other) else { Issue.record("not final"); return }
        #expect(outcome.providerPhoneNumber == nil)
    }

    @Test func userInfoOutagesAreRetried() {
        #expect(Self.phone(Self.answer(503, "")) == .retry)
        #expect(Self.phone(Self.answer(429, "")) == .retry)
        #expect(Self.phone(.noAnswer("refused")) == .retry)
    }

    @Test func theDeactivationRule() {
        let task = Self.task(.accountDeactivated), now = Date()
        func decide(_ known: ConfirmedToken?) -> (EventStatus, VerificationReason) {
            let outcome = OAuth2OutcomeRules.deactivation(task: task, known: known, now: now)
            return (outcome.status, outcome.reason)
        }
        #expect(decide(nil) == (.rejected, .unknownToken))
        #expect(decide(ConfirmedToken(expiresAt: now + 60, superseded: true)) == (.rejected, .supersededToken))
        #expect(decide(ConfirmedToken(expiresAt: now - 1, superseded: false)) == (.rejected, .tokenExpired))
        #expect(decide(ConfirmedToken(expiresAt: now, superseded: false)) == (.rejected, .tokenExpired))
        #expect(decide(ConfirmedToken(expiresAt: now + 60, superseded: false)) == (.verified, .knownTokenInactive))
        #expect(decide(ConfirmedToken(expiresAt: nil, superseded: false)) == (.verified, .knownTokenInactive))
        #expect(OAuth2OutcomeRules.deactivation(task: task, known: ConfirmedToken(expiresAt: nil, superseded: false), now: now)
            .providerUserID == "42")
    }
}
