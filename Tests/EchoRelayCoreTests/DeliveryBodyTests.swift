import EchoRelayCore
import Foundation
import Testing

/// The delivery body's byte writer against what the body always was: the document as a
/// `JSONValue` tree, encoded by `JSONEncoder` (`canonicalEncoding()`).
@Suite struct DeliveryBodyTests {
    /// The body as it was built before the byte writer, kept here as the reference.
    static func encodedByJSONEncoder(_ task: DeliveryTask) -> [UInt8] {
        var data: [String: JSONValue] = [:]
        if task.type == .phoneChanged {
            data["phone_number"] = task.phoneNumber.map(JSONValue.string) ?? .null
            if let previous = task.previousPhoneNumber { data["previous_phone_number"] = .string(previous) }
        }
        var object: [String: JSONValue] = [
            "type": .string(task.type.rawValue),
            "event_id": .string(task.eventID),
            "user_id": .string(task.userID),
            "sequence": .integer(task.sequence),
            "occurred_at": .string(RFC3339.format(task.occurredAt)),
            "verified_at": .string(RFC3339.format(task.verifiedAt)),
            "data": .object(data),
        ]
        if let replay = task.replay {
            object["replay"] = .object(["id": .string(replay.id), "at": .string(RFC3339.format(replay.at))])
        }
        return Array(JSONValue.object(object).canonicalEncoding())
    }

    static func task(
        type: EventType, eventID: String = "evt_1", userID: String = "42", sequence: Int64 = 7,
        phone: String? = nil, previous: String? = nil, replay: DeliveryReplay? = nil
    ) -> DeliveryTask {
        DeliveryTask(
            deliveryID: 1, eventID: eventID, subscriptionID: "sub_1", webhookID: "msg_1", url: "https://example.com/hook",
            secrets: [], attempts: 1, type: type, userID: userID, sequence: sequence,
            occurredAt: Date(timeIntervalSince1970: 1_795_342_530), verifiedAt: Date(timeIntervalSince1970: 1_795_342_531.25),
            phoneNumber: phone, previousPhoneNumber: previous, replay: replay
        )
    }

    /// Strings that need every kind of escape, and some that need none although they look as if.
    static let awkward = [
        "", "plain", "quote \" and backslash \\", "slash / stays", "controls \u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1B}\u{1F}",
        "DEL \u{7F}", "é précomposé and e\u{301}", "line separator \u{2028} paragraph \u{2029}", "emoji 📞", "\u{FEFF}bom",
        "</script>", "+15555550100",
    ]

    @Test func everyTypeWithAndWithoutReplayAndPreviousPhoneMatchesJSONEncoder() {
        let replays: [DeliveryReplay?] = [nil, DeliveryReplay(id: "rpl_1", at: Date(timeIntervalSince1970: 1_795_400_000.123456))]
        let phones: [String?] = [nil, "+15555550100"]
        var checked = 0
        for type in EventType.allCases {
            for replay in replays {
                for phone in phones {
                    for previous in phones {
                        let task = Self.task(type: type, phone: phone, previous: previous, replay: replay)
                        #expect(task.body() == Self.encodedByJSONEncoder(task),
                                "\(type) replay=\(replay != nil) phone=\(phone ?? "nil") previous=\(previous ?? "nil")")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == EventType.allCases.count * 8)
    }

    @Test(arguments: awkward)
    func stringsNeedingEscapesMatchJSONEncoder(text: String) {
        for type in EventType.allCases {
            let task = Self.task(type: type, eventID: text, userID: text, phone: text, previous: text,
                                 replay: DeliveryReplay(id: text, at: Date(timeIntervalSince1970: 0)))
            #expect(task.body() == Self.encodedByJSONEncoder(task), "\(type): \(text.debugDescription)")
        }
    }

    @Test(arguments: [Int64.min, -1, 0, 1, Int64.max])
    func sequencesMatchJSONEncoder(sequence: Int64) {
        let task = Self.task(type: .tokenRotated, sequence: sequence)
        #expect(task.body() == Self.encodedByJSONEncoder(task))
    }

    @Test func theBodyIsTheSameForEverySubscriptionButNotForAReplay() {
        var first = Self.task(type: .phoneChanged, phone: "+15555550101", previous: "+15555550100")
        var second = first
        second.subscriptionID = "sub_2"
        second.webhookID = "msg_2"
        second.url = "https://other.example/hook"
        second.attempts = 3
        #expect(DeliveryBody(first) == DeliveryBody(second))

        second.replay = DeliveryReplay(id: "rpl_1", at: Date(timeIntervalSince1970: 1_795_400_000))
        #expect(DeliveryBody(first) != DeliveryBody(second))
        #expect(first.body() != second.body())
        // A previous phone number learnt later (an earlier event verified since) changes it too.
        first.previousPhoneNumber = "+15555550199"
        #expect(DeliveryBody(first) != DeliveryBody(Self.task(type: .phoneChanged, phone: "+15555550101", previous: "+15555550100")))
    }
}
