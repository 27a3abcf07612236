import EchoRelayCore
import EchoRelayQueue
import InMemoryLogging
import Logging
import Testing

/// At `info`, the workers report counts now and then instead of a line per item.
@Suite struct OutcomeSummaryTests {
    @Test func outcomesAreReportedOncePerIntervalAndThenStartAgain() {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test") { _ in handler }
        logger.logLevel = .info
        let keys = ["deliveries.delivered", "deliveries.retried", "deliveries.dead"]
        let summary = OutcomeSummary("webhooks sent", keys: keys, interval: .seconds(3600))
        for _ in 0..<5 { summary.count("deliveries.delivered", logger: logger) }
        summary.count("deliveries.retried", logger: logger)
        #expect(handler.entries.isEmpty, "nothing is said before the interval has passed")

        let everyTime = OutcomeSummary("webhooks sent", keys: keys, interval: .zero)
        everyTime.count("deliveries.delivered", logger: logger)
        everyTime.count("deliveries.dead", logger: logger)
        let lines = handler.entries
        #expect(lines.map(\.message.description) == ["webhooks sent", "webhooks sent"])
        #expect(lines.map(\.level) == [.info, .info])
        #expect(lines.first?.metadata["deliveries.delivered"] == "1" && lines.first?.metadata["deliveries.dead"] == "0")
        #expect(lines.last?.metadata["deliveries.delivered"] == "0" && lines.last?.metadata["deliveries.dead"] == "1",
                "each report counts only what came since the last")
    }
}
