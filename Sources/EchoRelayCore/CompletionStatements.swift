/// What a store gives the queue's completers, as River's drivers do: each kind of finished
/// work's batch write. Each takes its batch with `take` once it holds the database, so a
/// caller that gave up before then is never written; writes it in one transaction when it can
/// (else each item alone, so one bad item fails alone); answers each item, in order; and
/// throws only when it could write nothing, which is then every item's answer. A write still
/// running at `limit` fails, and its connection is dropped.
public protocol CompletionStatements: Sendable {
    /// New events and their verification work items; the items of the first events that
    /// `handOff(count)` allows are leased to its owner as they are written.
    func writeIngests(
        within limit: Duration, handOff: @escaping @Sendable (_ count: Int) -> HandOff?,
        take: @escaping @Sendable () -> [IncomingEvent]
    ) async throws -> [Result<IngestWritten, any Error>]

    /// Final verification outcomes (`EventStore.finishVerification`).
    func writeVerificationFinishes(
        within limit: Duration, take: @escaping @Sendable () -> [VerificationFinish]
    ) async throws -> [Result<FinishedWork, any Error>]

    /// Delivery attempts and what follows each (`DeliveryStore.recordDeliveryAttempts`).
    func writeAttempts(
        within limit: Duration, take: @escaping @Sendable () -> [RecordedAttempt]
    ) async throws -> [Result<FinishedWork, any Error>]
}

/// An event an ingest wrote, with its verification when the write leased it to the hand-off's owner.
public struct IngestWritten: Sendable {
    public var receipt: IngestReceipt
    public var handedOff: VerificationTask?

    public init(receipt: IngestReceipt, handedOff: VerificationTask? = nil) {
        self.receipt = receipt
        self.handedOff = handedOff
    }
}

/// A final outcome to write for `task`, whose lease `owner` holds; with a `handOff`, the new
/// deliveries that may go at once are written leased to its owner.
public struct VerificationFinish: Sendable {
    public let task: VerificationTask
    public let owner: String
    public let outcome: VerificationOutcome
    public let handOff: HandOff?

    public init(task: VerificationTask, owner: String, outcome: VerificationOutcome, handOff: HandOff?) {
        self.task = task
        self.owner = owner
        self.outcome = outcome
        self.handOff = handOff
    }
}

/// An attempt to write for a delivery whose lease `owner` holds, with what follows it.
public struct RecordedAttempt: Sendable {
    public let task: DeliveryTask
    public let owner: String
    public let attempt: DeliveryAttempt
    public let next: DeliveryNext
    /// A failure this long after the subscription's last success disables it.
    public let disableAfter: Duration
    /// Who leases the next delivery of the queue at once, if anyone.
    public let handOff: HandOff?
    /// The claim's cap per subscription, for whether a claim would find room.
    public let cap: Int

    public init(task: DeliveryTask, owner: String, attempt: DeliveryAttempt, next: DeliveryNext, disableAfter: Duration,
                handOff: HandOff?, cap: Int) {
        self.task = task
        self.owner = owner
        self.attempt = attempt
        self.next = next
        self.disableAfter = disableAfter
        self.handOff = handOff
        self.cap = cap
    }

    public init(_ record: AttemptRecord, owner: String, disableAfter: Duration, handOff: HandOff?, cap: Int) {
        self.init(task: record.task, owner: owner, attempt: record.attempt, next: record.next, disableAfter: disableAfter,
                  handOff: handOff, cap: cap)
    }
}
