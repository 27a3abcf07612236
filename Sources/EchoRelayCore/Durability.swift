/// What an acknowledgement promises (`ECHORELAY_DURABILITY`): a `202` at ingest, or a `2xx`
/// to any change someone outside asked for, comes only once the change is this durable.
public enum Durability: String, Sendable, CaseIterable {
    /// Committed on the primary: lost if that machine is lost before a standby has it.
    case local
    /// Committed on the primary and flushed by at least one of its standbys: it survives
    /// the loss of any one database node.
    case standby
}

/// No standby confirmed, in time, that it holds a commit (`Durability.standby`). The change is
/// committed on the primary and may or may not survive its loss, so the answer is a `503`:
/// the same event or SET sent again gets its stored receipt, or is stored again on the
/// promoted node. The reason is safe to log and show: it names no row.
public struct StandbyUnconfirmed: Error, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { "no standby confirmed holding the commit: \(reason)" }
}
