import EchoRelayCore
import Foundation
import Logging

extension DeliveryQueue {
    /// The safety net of parking (`DeliveryStore.unparkStrandedDeliveries`): every poll
    /// interval it looks at what was parked lately, which is where a park that raced with its
    /// blocker's end is found; every `fullSweepEvery` at all that is parked.
    func sweepParked() async {
        let fullSweepEvery = 60
        var round = 0
        while !stopping.isSet, !Task.isCancelled {
            try? await Task.sleep(for: configuration.pollInterval)
            guard !stopping.isSet, !Task.isCancelled else { return }
            round += 1
            let since = round % fullSweepEvery == 0 ? nil : Date(timeIntervalSinceNow: -Self.parkRaceWindow)
            do {
                let unparked = try await unlessStopped(stopping) { [store] in
                    try await store.unparkStrandedDeliveries(parkedSince: since)
                }
                if unparked > 0 {
                    logger.notice("unparked deliveries whose queue could go on", metadata: ["deliveries": "\(unparked)"])
                    wake.wake()
                }
            } catch is CancellationError where stopping.isSet {
                return
            } catch {
                logger.warning("looking for stranded parked deliveries failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// How far back the frequent sweep looks: a park raced with its blocker only if the
    /// statement that parked it was still running when the blocker ended, so this must be
    /// longer than such a statement takes plus a poll interval; what a slower one strands,
    /// the full sweep finds within a minute. Not longer: under a backlog of 10,000, a 30 s
    /// window re-checked about 5,000 parked deliveries a second (30–120 ms a sweep).
    static let parkRaceWindow: TimeInterval = 5
}
