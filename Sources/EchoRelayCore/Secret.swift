/// A value that must never reach a log line or an error text: tokens, signing secrets,
/// OAuth credentials. Its descriptions print a fixed placeholder; code that needs the value
/// reads `revealed` on purpose.
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public let revealed: String

    public init(_ value: String) {
        self.revealed = value
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
}
