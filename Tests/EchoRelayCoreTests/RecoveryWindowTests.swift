import EchoRelayCore
import Foundation
import Testing

@Suite struct RecoveryWindowTests {
    let created = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func theWindowStartsAtTheCreationUnlessStaffAsk() {
        let early = created.addingTimeInterval(-86_400)
        let bounded = Recovery.bounded(subscriptionID: "sub_1", since: early, until: nil, beforeCreation: false, subscriptionCreatedAt: created)
        #expect(bounded.since == created && !bounded.beforeCreation)
        let asked = Recovery.bounded(subscriptionID: "sub_1", since: early, until: nil, beforeCreation: true, subscriptionCreatedAt: created)
        #expect(asked.since == early && asked.beforeCreation && asked.json.objectValue?["before_creation"] == .bool(true))
        let later = created.addingTimeInterval(60)
        let within = Recovery.bounded(subscriptionID: "sub_1", since: later, until: nil, beforeCreation: true, subscriptionCreatedAt: created)
        #expect(within.since == later && !within.beforeCreation, "asking changes nothing for a window after the creation")
    }

    @Test func anAppMayNotAskForMore() {
        #expect(Recovery.appProblem(beforeCreation: true)?.field == "before_creation")
        #expect(Recovery.appProblem(beforeCreation: false) == nil)
    }
}
