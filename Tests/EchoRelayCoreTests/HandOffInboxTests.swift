import EchoRelayCore
import EchoRelayQueue
import Testing

@Suite struct HandOffInboxTests {
    let handOff = HandOff(owner: "p1", lease: .seconds(60))

    @Test func withACapacityAWriteIsHandedOffOnlyWhileItFits() {
        let inbox = HandOffInbox<Int>(handOff: handOff, capacity: 3)
        #expect(inbox.request(count: 3) == handOff)
        inbox.add([1, 2])
        #expect(inbox.request(count: 1) == handOff)
        #expect(inbox.request(count: 2) == nil, "two more would make four")
        #expect(inbox.take(upTo: 1).map(\.item) == [1])
        #expect(inbox.request(count: 2) == handOff)
    }

    @Test func withoutACapacityEveryWriteIsHandedOff() {
        let inbox = HandOffInbox<Int>(handOff: handOff, capacity: nil)
        inbox.add(Array(0..<10_000))
        #expect(inbox.request(count: 10_000) == handOff)
    }

    @Test func itemsAddedFirstGoBeforeThoseWaiting() {
        let inbox = HandOffInbox<Int>(handOff: handOff, capacity: 10)
        inbox.add([3, 4])
        inbox.add([1, 2], first: true)
        #expect(inbox.items == [1, 2, 3, 4])
        #expect(inbox.take(upTo: 3).map(\.item) == [1, 2, 3])
    }

    @Test func itemsComeOutOldestFirstAndThoseHandedOffBeforeAnInstantAreDropped() {
        let inbox = HandOffInbox<Int>(handOff: handOff, capacity: 10)
        inbox.add([1, 2])
        let between = ContinuousClock.now
        inbox.add([3])
        #expect(inbox.drop(handedOffBefore: between) == 2)
        #expect(inbox.drop(handedOffBefore: between) == 0)
        let left = inbox.take(upTo: 10)
        #expect(left.map(\.item) == [3])
        #expect(left.allSatisfy { $0.at >= between })
        #expect(inbox.isEmpty)
    }
}
