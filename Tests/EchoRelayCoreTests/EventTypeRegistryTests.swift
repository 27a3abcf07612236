import EchoRelayCore
import Foundation
import Testing

/// The registry of event types (`EventType.registry`) and what each descriptor decides, run
/// over every registered type: a type added to the registry is tested here without a new case.
@Suite struct EventTypeRegistryTests {
    @Test func namesAreUniqueDottedLowerCaseAndRoundTrip() throws {
        let names = EventType.registry.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(EventType.allCases.map(\.rawValue) == names, "allCases is the registry, in its order")
        for name in names {
            #expect(name.wholeMatch(of: /[a-z]+(\.[a-z_]+)+/) != nil, "\(name)")
            let type = try #require(EventType(rawValue: name))
            #expect(type.rawValue == name && type.descriptor.name == name && "\(type)" == name)
            let decoded = try JSONDecoder().decode(EventType.self, from: JSONEncoder().encode(type))
            #expect(decoded == type)
            #expect(!type.descriptor.summary.isEmpty)
        }
        #expect(EventType(rawValue: "email.changed") == nil)
        #expect(EventType(rawValue: "") == nil)
    }

    @Test func decodingAnUnknownNameSaysWhichAreKnown() {
        #expect {
            try JSONDecoder().decode(EventType.self, from: Data(#""email.changed""#.utf8))
        } throws: { error in
            "\(error)".contains(EventFieldRules.typeReason)
        }
        #expect(EventFieldRules.typeReason == "must be one of " + EventType.registry.map { "\"\($0.name)\"" }.joined(separator: ", "))
        #expect(EventType.namesInProse == "token.rotated, phone.changed or account.deactivated")
    }

    /// A push without `data` is refused exactly for the types whose descriptor requires
    /// `data.phone_number`, naming the field and the type.
    @Test(arguments: EventType.allCases)
    func dataIsRequiredWhereTheDescriptorSays(type: EventType) {
        let body = #"{"id":"e1","type":"\#(type.rawValue)","user_id":"42","occurred_at":"2026-01-31T12:00:00Z","echo":{"service_provider":"https://api.example.com/v","authorization":"OAuth x"}}"#
        let result = Result { () throws(EventParseError) in try IncomingEvent.parse(body: Array(body.utf8)) }
        switch type.descriptor.phoneNumber {
        case .required:
            #expect(throws: EventParseError.invalidFields([.init(field: "data", reason: "is required for \(type.rawValue)")])) {
                try result.get()
            }
        case .optional:
            #expect((try? result.get())?.type == type)
        }
    }

    /// A delivery's `data` holds the phone numbers exactly for the types whose descriptor says so.
    @Test(arguments: EventType.allCases)
    func aDeliverysDataIsWhatTheDescriptorSays(type: EventType) throws {
        let task = DeliveryTask(
            deliveryID: 1, eventID: "e1", subscriptionID: "sub_1", webhookID: "msg_1", url: "https://app.example/hook",
            secrets: [], attempts: 1, type: type, userID: "42", sequence: 1, occurredAt: Date(), verifiedAt: Date(),
            phoneNumber: "+15555550100", previousPhoneNumber: "+15555550199")
        guard case .object(let body)? = try? JSONValue.parse(task.body()) else {
            Issue.record("the body is not a JSON object")
            return
        }
        #expect(body["type"] == .string(type.rawValue))
        let data: [String: JSONValue] = type.descriptor.deliversPhoneNumber
            ? ["phone_number": .string("+15555550100"), "previous_phone_number": .string("+15555550199")] : [:]
        #expect(body["data"] == .object(data))
    }

    /// What the provider's answer must show, by the descriptor's evidence: a live session for
    /// the user verifies the first two kinds and rejects the third as forged; an ended session
    /// verifies only the third, and only for a token once confirmed.
    @Test(arguments: EventType.allCases)
    func theEvidenceDecidesTheOutcome(type: EventType) {
        let target = EchoTarget(url: "https://api.example.com/v", authorization: Secret("OAuth x"), tokenHash: [7])
        let task = VerificationTask(workItemID: 1, eventID: "e", type: type, userID: "42", sequence: 1, occurredAt: Date(),
                                    pushedPhoneNumber: "+15555550100", echo: nil, attempts: 1)
        func decide(_ json: String, status: Int = 200, known: Bool = false) -> (EventStatus, VerificationReason)? {
            guard case .final(let outcome) = EchoOutcomeRules.decide(
                task: task, target: target, answer: .response(status: status, body: Array(json.utf8)), tokenKnownForUser: known)
            else { return nil }
            return (outcome.status, outcome.reason)
        }
        let alive = decide(#"{"id_str":"42","phone_number":"+15555550100"}"#)
        let aliveOtherPhone = decide(#"{"id_str":"42","phone_number":"+15555550199"}"#)
        let ended = decide(#"{"errors":[{"code":89}]}"#, status: 401, known: true)
        switch type.descriptor.evidence {
        case .sessionAlive:
            #expect(alive! == (.verified, .providerConfirmed) && aliveOtherPhone! == (.verified, .providerConfirmed))
            #expect(ended! == (.rejected, .tokenInvalid))
        case .sessionAliveShowingPushedPhone:
            #expect(alive! == (.verified, .providerConfirmed) && aliveOtherPhone! == (.rejected, .phoneMismatch))
            #expect(ended! == (.rejected, .tokenInvalid))
        case .sessionEnded:
            #expect(alive! == (.rejected, .accountActive))
            #expect(ended! == (.verified, .knownTokenExpired))
        }
    }
}
