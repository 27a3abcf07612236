import InMemoryLogging
import Logging

/// Captures everything a component logs, at every level, so a test can assert on what
/// was — and was not — written.
public struct LogCapture: Sendable {
    public let handler = InMemoryLogHandler()

    public init() {}

    public var logger: Logger {
        var logger = Logger(label: "echorelay", factory: { [handler] _ in handler })
        logger.logLevel = .trace
        return logger
    }

    /// Every entry as one line: level, message and metadata.
    public var text: String {
        handler.entries.map { "\($0.level) \($0.message) \($0.metadata)" }.joined(separator: "\n")
    }
}
