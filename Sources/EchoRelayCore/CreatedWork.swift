/// What kind of work a request has just committed, so only the workers that take it are
/// woken: an ingest must not make every delivery worker run its claim query.
public enum CreatedWork: Sendable {
    case verification, delivery, replay
    /// Verifications handed to this process's verify worker (`IngestReceipt.handedOff`): it
    /// is woken to take them from its inbox, with no claim.
    case verificationHandedOff
}
