/// What a finished item leaves for its loop, which looks again only when there is something.
public enum WorkLeft: Sendable {
    case nothing
    /// Work handed to this process's inbox: the loop takes it without a claim.
    case inInbox
    /// Work made due that only a claim finds.
    case forClaim
}
