import EchoRelayCore
import Logging

/// What a verify worker made of one event: the outcome to record, or a later try; with what
/// the provider said, for the log lines about it.
public struct VerificationResult: Sendable {
    public enum Next: Sendable {
        case finish(VerificationOutcome)
        /// Due again after `delay`, keeping its try count; `reason` is why it could not be decided.
        case retry(after: Duration, reason: VerificationReason)
    }

    public var next: Next
    public var answered: Logger.Metadata

    public init(_ next: Next, answered: Logger.Metadata = [:]) {
        self.next = next
        self.answered = answered
    }
}
