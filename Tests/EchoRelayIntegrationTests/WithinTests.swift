import Testing
import TestSupport

/// The test helper that turns a hung step into a failure naming it.
@Suite struct WithinTests {
    @Test func aStepThatFinishesInTimeGivesItsValue() async throws {
        #expect(try await within(.seconds(10), "adding") { 2 + 3 } == 5)
    }

    @Test func aStepThatNeverFinishesFailsNamingItselfWithoutWaitingForIt() async throws {
        let started = ContinuousClock.now
        let error = await #expect(throws: TestSetupError.self) {
            // Ignores cancellation for 20 s, as the hung steps this guards against did: it
            // waits for a task of its own, which its cancellation does not reach. (A loop of
            // `try? await Task.sleep` spun once cancelled, the sleep returning at once, and
            // held a thread of the concurrency pool for 20 s, stalling tests beside it.)
            try await within(.milliseconds(200), "the stuck step") { () async throws -> Int in
                await Task.detached { try? await Task.sleep(for: .seconds(20)) }.value
                return 1
            }
        }
        #expect(error?.description == "the stuck step did not finish within 0.2 seconds")
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func aStepsErrorIsItsOwn() async throws {
        await #expect(throws: CancellationError.self) {
            try await within(.seconds(10), "failing") { () async throws -> Int in throw CancellationError() }
        }
    }
}
