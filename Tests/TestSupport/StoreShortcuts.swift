import EchoRelayCore
import EchoRelayQueue

// One item at a time, as the tests write their outcomes and attempts; the workers write theirs
// in batches, with hand-offs.

extension EventStore {
    /// Records an outcome without a hand-off: true if the lease was still ours.
    public func finishVerification(_ task: VerificationTask, owner: String, outcome: VerificationOutcome) async throws -> Bool {
        try await finishVerification(task, owner: owner, outcome: outcome, handOff: nil).kept
    }
}

extension DeliveryStore {
    /// Records one attempt and what follows (see `recordDeliveryAttempts`).
    public func recordDeliveryAttempt(_ task: DeliveryTask, owner: String, attempt: DeliveryAttempt, next: DeliveryNext,
                                      disableAfter: Duration, handOff: HandOff?, perSubscriptionCap: Int = .max) async throws -> FinishedWork {
        let records = [AttemptRecord(task: task, attempt: attempt, next: next)]
        guard let result = await recordDeliveryAttempts(records, owner: owner, disableAfter: disableAfter, handOff: handOff,
                                                        perSubscriptionCap: perSubscriptionCap).first else {
            throw GroupCommitError.missingResult
        }
        return try result.get()
    }

    /// Records an attempt without a hand-off: true if the lease was still ours.
    public func recordDeliveryAttempt(_ task: DeliveryTask, owner: String, attempt: DeliveryAttempt, next: DeliveryNext,
                                      disableAfter: Duration) async throws -> Bool {
        try await recordDeliveryAttempt(task, owner: owner, attempt: attempt, next: next, disableAfter: disableAfter, handOff: nil).kept
    }
}
