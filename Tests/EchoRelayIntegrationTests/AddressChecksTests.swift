import EchoRelayCore
import EchoRelayWorkers
import Synchronization
import Testing

/// The delivery worker's per-host memory of address checks, on a stepped clock and a counted
/// stand-in resolver (no DNS traffic).
@Suite struct AddressChecksTests {
    /// A clock the test moves by hand, and a resolver that counts its look-ups.
    final class Fixture: Sendable {
        let start = ContinuousClock.now
        let elapsed = Mutex<Duration>(.zero)
        let lookUps = Mutex<[String]>([])
        let answers: [String: AddressChecks.Check]

        init(_ answers: [String: AddressChecks.Check]) {
            self.answers = answers
        }

        func checks() -> AddressChecks {
            AddressChecks(policy: SubscriberURLPolicy(allowPrivate: false), now: { self.start + self.elapsed.withLock { $0 } }) { host in
                self.lookUps.withLock { $0.append(host) }
                return self.answers[host] ?? .failure(SubscriberURLProblem("does not resolve"))
            }
        }

        func advance(_ step: Duration) { elapsed.withLock { $0 += step } }
        var count: Int { lookUps.withLock { $0.count } }
    }

    static let publicAddress = IPAddress.parse("93.184.215.14")!

    @Test func anAllowedHostIsLookedUpOnceForFiveSeconds() async throws {
        let fixture = Fixture(["hooks.example": .success([Self.publicAddress])])
        let checks = fixture.checks()
        for _ in 0..<5 {
            #expect(try await checks.check(host: "hooks.example").get() == [Self.publicAddress])
            fixture.advance(.milliseconds(900))
        }
        #expect(fixture.count == 1, "five deliveries within 4.5 s, one look-up")

        fixture.advance(.milliseconds(600))  // 5.1 s after the look-up
        _ = await checks.check(host: "hooks.example")
        #expect(fixture.count == 2, "looked up again once the answer expired")
    }

    @Test func aRefusalIsKeptForOneSecondOnly() async throws {
        let refusal = SubscriberURLProblem("points to a private address (10.0.0.0/8)")
        let fixture = Fixture(["inside.example": .failure(refusal)])
        let checks = fixture.checks()
        #expect(await checks.check(host: "inside.example") == .failure(refusal))
        fixture.advance(.milliseconds(500))
        #expect(await checks.check(host: "inside.example") == .failure(refusal))
        #expect(fixture.count == 1)
        fixture.advance(.milliseconds(600))
        #expect(await checks.check(host: "inside.example") == .failure(refusal))
        #expect(fixture.count == 2, "a refusal is re-checked after a second")
    }

    @Test func eachHostHasItsOwnAnswer() async throws {
        let fixture = Fixture(["a.example": .success([Self.publicAddress])])
        let checks = fixture.checks()
        #expect((try? await checks.check(host: "a.example").get()) != nil)
        #expect((try? await checks.check(host: "b.example").get()) == nil, "b.example does not share a.example's answer")
        #expect(fixture.lookUps.withLock { $0 } == ["a.example", "b.example"])
    }
}
