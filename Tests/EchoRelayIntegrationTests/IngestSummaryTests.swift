@testable import EchoRelayHTTP
import InMemoryLogging
import Logging
import Testing

/// At `info`, ingest reports counts now and then instead of a line per event.
@Suite struct IngestSummaryTests {
    @Test func countsAreReportedOncePerIntervalAndThenStartAgain() {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test") { _ in handler }
        logger.logLevel = .info
        let summary = IngestSummary(interval: .seconds(3600))
        for _ in 0..<5 { summary.count(duplicate: false, logger: logger) }
        summary.count(duplicate: true, logger: logger)
        #expect(handler.entries.isEmpty, "nothing is said before the interval has passed")

        let everyTime = IngestSummary(interval: .zero)
        everyTime.count(duplicate: false, logger: logger)
        everyTime.count(duplicate: true, logger: logger)
        let lines = handler.entries
        #expect(lines.map(\.message.description) == ["events received", "events received"])
        #expect(lines.map(\.level) == [.info, .info])
        #expect(lines.first?.metadata["events.accepted"] == "1" && lines.first?.metadata["events.duplicates"] == "0")
        #expect(lines.last?.metadata["events.accepted"] == "0" && lines.last?.metadata["events.duplicates"] == "1",
                "each report counts only what came since the last")
    }
}
