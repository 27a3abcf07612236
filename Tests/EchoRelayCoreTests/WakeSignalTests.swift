import EchoRelayCore
import EchoRelayQueue
import Testing

/// `WakeSignal`: no wake-up is lost, every wait ends by its timeout whatever the others wait
/// for (they share one timer), and a wake says whether a claim should look.
@Suite struct WakeSignalTests {
    @Test func aWakeWithNobodyWaitingIsKeptForTheNextWait() async {
        let signal = WakeSignal()
        signal.wake()
        let clock = ContinuousClock()
        let waited = await clock.measure { await signal.wait(upTo: .seconds(30)) }
        #expect(waited < .seconds(10), "returns at once: the wake came first")
    }

    @Test func aWakeEndsEveryWaitGoingOn() async {
        let signal = WakeSignal()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { await signal.wait(upTo: .seconds(60)) } }
            // Wake until all three have returned: a wake that came before a wait began is
            // kept for it, so each of them ends whatever the order.
            group.addTask {
                for _ in 0..<600 {
                    signal.wake()
                    try? await Task.sleep(for: .milliseconds(50))
                }
            }
            var ended = 0
            for await _ in group {
                ended += 1
                if ended == 3 { group.cancelAll() }
            }
            #expect(ended == 4)
        }
    }

    @Test func aShortWaitEndsOnTimeBesideALongOne() async {
        let signal = WakeSignal()
        let clock = ContinuousClock()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await signal.wait(upTo: .seconds(60)) }
            try? await Task.sleep(for: .milliseconds(50))  // the long wait's timer runs first
            let short = await clock.measure { await signal.wait(upTo: .milliseconds(100)) }
            #expect(short >= .milliseconds(100))
            #expect(short < .seconds(30), "the shorter deadline gets a timer of its own")
            signal.wake()
        }
    }

    @Test func waitsEndByTheirTimeoutOneAfterAnother() async {
        let signal = WakeSignal()
        let clock = ContinuousClock()
        for _ in 0..<3 {
            let waited = await clock.measure { await signal.wait(upTo: .milliseconds(50)) }
            #expect(waited >= .milliseconds(50))
        }
    }

    @Test func aCancelledWaitEnds() async {
        let signal = WakeSignal()
        let waiter = Task { await signal.wait(upTo: .seconds(60)) }
        waiter.cancel()
        let clock = ContinuousClock()
        let waited = await clock.measure { await waiter.value }
        #expect(waited < .seconds(30))
    }

    @Test func aWakeAsksForAClaimUnlessItIsForTheInboxAlone() {
        let signal = WakeSignal()
        #expect(!signal.takeClaimRequest())
        signal.wake(claim: false)
        #expect(!signal.takeClaimRequest(), "work in the inbox needs no claim")
        signal.wake()
        signal.wake(claim: false)
        #expect(signal.takeClaimRequest(), "an earlier wake asked for one")
        #expect(!signal.takeClaimRequest(), "taken once")
    }
}
