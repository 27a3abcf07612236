import EchoRelayCore
import EchoRelayQueue
@testable import EchoRelayWorkers
import Foundation
import Synchronization
import Testing

/// The attempts of one event's deliveries that went out together are written together, but a
/// slow sibling holds the others no longer than the linger (unit tests: the write is a closure
/// that records what it was given; DeliveryTests shows the one commit on PostgreSQL).
@Suite struct SiblingAttemptsTests {
    /// What the write closure was given, call by call.
    final class Writes: Sendable {
        private let calls = Mutex<[[Int64]]>([])
        var batches: [[Int64]] { calls.withLock { $0 } }

        func write(_ records: [AttemptRecord]) async -> [Result<FinishedWork, any Error>] {
            calls.withLock { $0.append(records.map(\.task.deliveryID)) }
            return records.map { record in .success(FinishedWork(kept: true, handedOff: [record.task.deliveryID * 10])) }
        }
    }

    static func task(_ id: Int64, event: String) -> DeliveryTask {
        DeliveryTask(deliveryID: id, eventID: event, subscriptionID: "sub_\(id)", webhookID: "msg_\(id)", url: "http://127.0.0.1:9/",
                     secrets: [], attempts: 1, type: .tokenRotated, userID: "u", sequence: 1, occurredAt: Date(),
                     verifiedAt: Date(), phoneNumber: nil, previousPhoneNumber: nil)
    }

    static func record(_ outgoing: Outgoing) -> AttemptRecord {
        AttemptRecord(task: outgoing.task, attempt: DeliveryAttempt(startedAt: Date(), duration: .milliseconds(1), statusCode: 200,
                                                                    errorKind: nil, error: nil, responseHead: nil),
                      next: .delivered)
    }

    @Test func deliveriesOfOneEventFormAGroupAndOthersGoAlone() {
        let writes = Writes()
        let outgoing = Outgoing.grouped([Self.task(1, event: "a"), Self.task(2, event: "b"), Self.task(3, event: "a")],
                                        linger: .seconds(1), write: writes.write)
        #expect(outgoing.map(\.task.deliveryID) == [1, 2, 3])
        #expect(outgoing[1].siblings == nil)
        #expect(outgoing[0].siblings != nil && outgoing[0].siblings === outgoing[2].siblings)
    }

    @Test func siblingsThatFinishWithinTheLingerAreWrittenInOneCall() async throws {
        let writes = Writes()
        let outgoing = Outgoing.grouped([Self.task(1, event: "a"), Self.task(2, event: "a")], linger: .seconds(30), write: writes.write)
        let group = try #require(outgoing[0].siblings)
        async let first = group.record(Self.record(outgoing[0]))
        try await Task.sleep(for: .milliseconds(50))
        #expect(writes.batches.isEmpty, "the first waits for its sibling")
        let second = try await #require(outgoing[1].siblings).record(Self.record(outgoing[1]))
        #expect(try await first.get() == FinishedWork(kept: true, handedOff: [10]))
        #expect(try second.get() == FinishedWork(kept: true, handedOff: [20]), "each gets its own result")
        #expect(writes.batches == [[1, 2]])
    }

    /// The sibling records nothing until the first has returned: only the linger running out
    /// can release the first (were it to wait for the sibling, the test would hang until its
    /// time limit). No wall-clock bound: on a loaded machine the timer itself runs late.
    @Test(.timeLimit(.minutes(1))) func aSlowSiblingHoldsTheOthersNoLongerThanTheLinger() async throws {
        let writes = Writes()
        let outgoing = Outgoing.grouped([Self.task(1, event: "a"), Self.task(2, event: "a")], linger: .milliseconds(50),
                                        write: writes.write)
        let first = try await #require(outgoing[0].siblings).record(Self.record(outgoing[0]))
        #expect(try first.get().kept)
        #expect(writes.batches == [[1]], "written alone once the linger ran out")
        _ = try await #require(outgoing[1].siblings).record(Self.record(outgoing[1]))
        #expect(writes.batches == [[1], [2]])
    }

    @Test func aSiblingCancelledAtShutdownStopsTheOthersWaiting() async throws {
        let writes = Writes()
        let outgoing = Outgoing.grouped([Self.task(1, event: "a"), Self.task(2, event: "a")], linger: .seconds(600),
                                        write: writes.write)
        let group = try #require(outgoing[0].siblings)
        async let first = group.record(Self.record(outgoing[0]))
        try await Task.sleep(for: .milliseconds(50))
        try #require(outgoing[1].siblings).abandon()
        #expect(try await first.get().kept)
        #expect(writes.batches == [[1]])
    }
}
