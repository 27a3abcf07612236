/// Asks a write that makes work due to lease it to this process as it writes it: `owner` is
/// this process's worker, `lease` how long it holds the work. The lease is durable: if the
/// process dies before doing the work, the lease lapses and any process claims it.
public struct HandOff: Sendable, Equatable {
    public var owner: String
    public var lease: Duration

    public init(owner: String, lease: Duration) {
        self.owner = owner
        self.lease = lease
    }
}
