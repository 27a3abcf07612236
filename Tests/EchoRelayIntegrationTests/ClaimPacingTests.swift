import EchoRelayQueue
@testable import EchoRelayWorkers
import Synchronization
import Testing

/// When a worker claims besides what it was handed: when asked, after a full claim, once a
/// poll interval, and never for a wake that only brought hand-offs.
@Suite struct ClaimPacingTests {
    final class Calls: Sendable {
        private let count = Mutex(0)
        func withLock<R>(_ body: (inout Int) -> R) -> R { count.withLock { body(&$0) } }
    }

    /// Runs `after` with a claim that returns `claimable` items (up to the room) and counts.
    static func step(_ pacing: ClaimPacing, handed: [Int] = [], free: Int = 4, asked: Bool, claimable: Int = 0,
                     every interval: Duration = .seconds(60), claims: Calls) async throws -> [Int] {
        try await pacing.after(handed, free: free, every: interval, asked: asked) { room in
            claims.withLock { $0 += 1 }
            return Array(repeating: 0, count: min(room, claimable))
        }
    }

    @Test func theFirstCallClaimsThenOnlyWhenAskedOrFull() async throws {
        let pacing = ClaimPacing()
        let claims = Calls()
        _ = try await Self.step(pacing, asked: false, claims: claims)
        #expect(claims.withLock { $0 } == 1, "nothing claimed yet: the first call looks")
        #expect(try await Self.step(pacing, handed: [1], asked: false, claims: claims) == [1])
        _ = try await Self.step(pacing, asked: false, claims: claims)
        #expect(claims.withLock { $0 } == 1, "a wake for hand-offs alone, or none, claims nothing")
        _ = try await Self.step(pacing, asked: true, claimable: 4, claims: claims)
        #expect(claims.withLock { $0 } == 2, "asked")
        _ = try await Self.step(pacing, asked: false, claims: claims)
        #expect(claims.withLock { $0 } == 3, "the last claim came back full: there may be more")
        _ = try await Self.step(pacing, asked: false, claims: claims)
        #expect(claims.withLock { $0 } == 3, "the last came back short")
    }

    /// The delivery worker's pacing: a claim whose room a cap per subscription cut short
    /// still claims again while it finds something.
    @Test func withAgainAfterAnyFindAClaimThatFoundSomethingClaimsAgain() async throws {
        let pacing = ClaimPacing(againAfterAnyFind: true)
        let claims = Calls()
        _ = try await Self.step(pacing, asked: false, claimable: 1, claims: claims)
        _ = try await Self.step(pacing, asked: false, claimable: 1, claims: claims)
        #expect(claims.withLock { $0 } == 2, "one of four found: claim again")
        _ = try await Self.step(pacing, asked: false, claimable: 0, claims: claims)
        #expect(claims.withLock { $0 } == 3)
        _ = try await Self.step(pacing, asked: false, claimable: 1, claims: claims)
        #expect(claims.withLock { $0 } == 3, "the last found nothing: wait for an ask or the poll")
    }

    /// Spaced claims: an ask that comes sooner than `spacing` after the last claim ended waits
    /// until then, and is not lost.
    @Test func anAskWithinTheSpacingWaitsForItsEnd() async throws {
        let pacing = ClaimPacing()
        let spacing = Duration.milliseconds(200)
        #expect(pacing.due(room: 4, every: .seconds(60), asked: false, spacing: spacing), "the first call looks")
        pacing.ended(found: 0, room: 4)
        #expect(!pacing.due(room: 4, every: .seconds(60), asked: true, spacing: spacing), "asked within the spacing")
        #expect(pacing.due(room: 4, every: .seconds(60), asked: true, spacing: .zero), "unspaced, the same ask is due")
        pacing.ended(found: 0, room: 4)
        #expect(!pacing.due(room: 4, every: .seconds(60), asked: true, spacing: spacing))
        try await Task.sleep(for: spacing + .milliseconds(20))
        #expect(pacing.due(room: 4, every: .seconds(60), asked: false, spacing: spacing), "the ask was kept for after it")
    }

    @Test func anAskWithNoRoomIsKeptForTheNextCall() async throws {
        let pacing = ClaimPacing()
        let claims = Calls()
        _ = try await Self.step(pacing, asked: false, claims: claims)
        _ = try await Self.step(pacing, handed: [1, 2, 3, 4], asked: true, claims: claims)
        #expect(claims.withLock { $0 } == 1, "no room: no claim")
        _ = try await Self.step(pacing, asked: false, claims: claims)
        #expect(claims.withLock { $0 } == 2, "the ask waited for room")
    }

    @Test func aFailedClaimIsAskedAgain() async throws {
        struct Down: Error {}
        let pacing = ClaimPacing()
        let claims = Calls()
        _ = try await Self.step(pacing, asked: false, claims: claims)
        await #expect(throws: Down.self) {
            _ = try await pacing.after([Int](), free: 4, every: .seconds(60), asked: true) { _ in throw Down() }
        }
        _ = try await Self.step(pacing, asked: false, claims: claims)
        #expect(claims.withLock { $0 } == 2, "the failed claim's ask stands")
    }

    @Test func aPollIntervalWithoutAClaimMakesOneDue() async throws {
        let pacing = ClaimPacing()
        let claims = Calls()
        _ = try await Self.step(pacing, asked: false, every: .milliseconds(50), claims: claims)
        try await Task.sleep(for: .milliseconds(60))
        _ = try await Self.step(pacing, asked: false, every: .milliseconds(50), claims: claims)
        #expect(claims.withLock { $0 } == 2)
    }
}

/// `Pace`: a sweep that need not run at every call runs at most once an interval.
@Suite struct PaceTests {
    @Test func itIsDueOnceAnInterval() async throws {
        let pace = Pace()
        #expect(pace.due(every: .milliseconds(200)), "the first call")
        #expect(!pace.due(every: .milliseconds(200)), "within the interval")
        try await Task.sleep(for: .milliseconds(250))
        #expect(pace.due(every: .milliseconds(200)), "after it")
    }
}
