@testable import EchoRelayWorkers
import EchoRelayCore
import EchoRelayQueue
import Foundation
import Testing

/// The queue of handed-off deliveries waiting for a slot of their subscription.
@Suite struct SlotQueueOrderTests {
    static func task(_ id: Int64, subscription: String) -> DeliveryTask {
        DeliveryTask(deliveryID: id, eventID: "e\(id)", subscriptionID: subscription, webhookID: "msg_\(id)", url: "http://127.0.0.1:9/",
                     secrets: [], attempts: 1, type: .tokenRotated, userID: "u\(id)", sequence: 1, occurredAt: Date(),
                     verifiedAt: Date(), phoneNumber: nil, previousPhoneNumber: nil)
    }

    /// A queue's next delivery, handed off after newer deliveries of its subscription began to
    /// wait, is older than they are and goes first.
    @Test func eachSubscriptionsOldestDeliveryGoesFirst() {
        let queue = SlotQueue()
        let now = ContinuousClock.now
        queue.add([Self.task(7, subscription: "s1"), Self.task(9, subscription: "s1"), Self.task(8, subscription: "s2")]) { _ in now }
        queue.add([Self.task(3, subscription: "s1")]) { _ in now }
        #expect(queue.take(upTo: 10) { $0 == "s1" ? 2 : 0 }.map(\.item.deliveryID) == [3, 7])
        #expect(queue.take(upTo: 10) { _ in 5 }.map(\.item.deliveryID) == [9, 8])
        #expect(queue.isEmpty)
    }

    @Test func deliveriesHandedOffBeforeAnInstantAreDroppedWhereverTheyWait() {
        let queue = SlotQueue()
        let old = ContinuousClock.now
        let new = old + .seconds(30)
        let at: [Int64: ContinuousClock.Instant] = [1: new, 2: old, 3: old, 4: new]
        queue.add([1, 2, 3].map { Self.task($0, subscription: "s1") } + [Self.task(4, subscription: "s2")]) { at[$0]! }
        #expect(queue.drop(handedOffBefore: old + .seconds(1)) == 2)
        #expect(Set(queue.ids) == [1, 4])
        #expect(queue.drop(handedOffBefore: old + .seconds(1)) == 0)
    }
}
