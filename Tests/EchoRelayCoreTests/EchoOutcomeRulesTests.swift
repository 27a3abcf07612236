import EchoRelayCore
import Foundation
import Testing

/// Every cell of the outcome table in docs/identity-provider.md.
@Suite struct EchoOutcomeRulesTests {
    static let target = EchoTarget(url: "https://api.example.com/v", authorization: Secret("OAuth x"), tokenHash: Array(repeating: 7, count: 32))

    static func task(_ type: EventType, phone: String? = nil) -> VerificationTask {
        VerificationTask(workItemID: 1, eventID: "e", type: type, userID: "42", sequence: 1, occurredAt: Date(),
                         pushedPhoneNumber: phone, echo: nil, attempts: 1)
    }

    static func decide(_ type: EventType, _ answer: ProviderAnswer, phone: String? = "+15555550100", known: Bool = false) -> VerificationDecision {
        EchoOutcomeRules.decide(task: task(type, phone: phone), target: target, answer: answer, tokenKnownForUser: known)
    }

    static func ok(_ json: String) -> ProviderAnswer { .response(status: 200, body: Array(json.utf8)) }
    static func error(_ status: Int, _ code: Int) -> ProviderAnswer {
        .response(status: status, body: Array(#"{"errors":[{"code":\#(code),"message":"m"}]}"#.utf8))
    }

    func outcome(_ decision: VerificationDecision) -> (EventStatus, VerificationReason)? {
        guard case .final(let outcome) = decision else { return nil }
        return (outcome.status, outcome.reason)
    }

    @Test func sameUser() {
        let digits = Self.ok(#"{"id_str":"42","phone_number":"+15555550100"}"#)
        #expect(outcome(Self.decide(.tokenRotated, digits))! == (.verified, .providerConfirmed))
        #expect(outcome(Self.decide(.tokenRotated, Self.ok(#"{"id":42,"screen_name":"x"}"#)))! == (.verified, .providerConfirmed))
        #expect(outcome(Self.decide(.phoneChanged, digits))! == (.verified, .providerConfirmed))
        #expect(outcome(Self.decide(.phoneChanged, digits, phone: "+15555550199"))! == (.rejected, .phoneMismatch))
        #expect(outcome(Self.decide(.accountDeactivated, digits))! == (.rejected, .accountActive))
        if case .final(let verified) = Self.decide(.phoneChanged, digits) {
            #expect(verified.providerUserID == "42")
            #expect(verified.providerPhoneNumber == "+15555550100")
            #expect(verified.confirmedTokenHash == Self.target.tokenHash)
        }
    }

    @Test(arguments: EventType.allCases)
    func otherUserIsRejected(type: EventType) {
        #expect(outcome(Self.decide(type, Self.ok(#"{"id_str":"43","phone_number":"+15555550100"}"#)))! == (.rejected, .userMismatch))
    }

    @Test func deadToken() {
        #expect(outcome(Self.decide(.tokenRotated, Self.error(401, 89)))! == (.rejected, .tokenInvalid))
        #expect(outcome(Self.decide(.phoneChanged, Self.error(401, 89)))! == (.rejected, .tokenInvalid))
        #expect(outcome(Self.decide(.accountDeactivated, Self.error(401, 89), known: false))! == (.rejected, .unknownToken))
        #expect(outcome(Self.decide(.accountDeactivated, Self.error(401, 89), known: true))! == (.verified, .knownTokenExpired))
    }

    @Test(arguments: EventType.allCases)
    func refusalsAreRejected(type: EventType) {
        #expect(outcome(Self.decide(type, Self.error(401, 32)))! == (.rejected, .badSignature))
        #expect(outcome(Self.decide(type, .response(status: 401, body: [])))! == (.rejected, .notAuthenticated))
        #expect(outcome(Self.decide(type, Self.error(403, 64)))! == (.rejected, .forbidden))
        #expect(outcome(Self.decide(type, .response(status: 302, body: [])))! == (.rejected, .redirected))
        #expect(outcome(Self.decide(type, .response(status: 404, body: [])))! == (.rejected, .providerRefused))
        #expect(outcome(Self.decide(type, Self.ok("<html>")))! == (.rejected, .unreadableResponse))
        #expect(outcome(Self.decide(type, Self.ok(#"{"screen_name":"x"}"#)))! == (.rejected, .unreadableResponse))
        #expect(outcome(Self.decide(type, .response(status: 200, body: [])))! == (.rejected, .unreadableResponse))
        // Values the database could not store are no account.
        #expect(outcome(Self.decide(type, Self.ok(#"{"id_str":"42\u0000"}"#)))! == (.rejected, .unreadableResponse))
        #expect(outcome(Self.decide(type, Self.ok(#"{"id_str":"42","phone_number":"+1555\u0000"}"#)))! == (.rejected, .unreadableResponse))
    }

    @Test(arguments: EventType.allCases)
    func staleTimestampIsUnverifiable(type: EventType) {
        #expect(outcome(Self.decide(type, Self.error(401, 135)))! == (.unverifiable, .timestampOutOfWindow))
        #expect(outcome(Self.decide(type, Self.error(400, 135)))! == (.unverifiable, .timestampOutOfWindow))
    }

    @Test(arguments: EventType.allCases)
    func outagesAreRetried(type: EventType) {
        #expect(Self.decide(type, .response(status: 500, body: [])) == .retry)
        #expect(Self.decide(type, .response(status: 503, body: [])) == .retry)
        #expect(Self.decide(type, Self.error(429, 88)) == .retry)
        #expect(Self.decide(type, .noAnswer("timed out")) == .retry)
    }
}
