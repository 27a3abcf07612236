import EchoRelayCore
@testable import EchoRelayWorkers
import InMemoryLogging
import Logging
import Testing

/// At `info`, the delivery worker reports counts now and then instead of a line per webhook.
@Suite struct DeliverySummaryTests {
    @Test func outcomesAreReportedOncePerIntervalAndThenStartAgain() {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test") { _ in handler }
        logger.logLevel = .info
        let summary = DeliverySummary(interval: .seconds(3600))
        for _ in 0..<5 { summary.count(.delivered, logger: logger) }
        summary.count(.retry(after: .seconds(1)), logger: logger)
        #expect(handler.entries.isEmpty, "nothing is said before the interval has passed")

        let everyTime = DeliverySummary(interval: .zero)
        everyTime.count(.delivered, logger: logger)
        everyTime.count(.dead(disableSubscription: nil), logger: logger)
        let lines = handler.entries
        #expect(lines.map(\.message.description) == ["webhooks sent", "webhooks sent"])
        #expect(lines.map(\.level) == [.info, .info])
        #expect(lines.first?.metadata["deliveries.delivered"] == "1" && lines.first?.metadata["deliveries.dead"] == "0")
        #expect(lines.last?.metadata["deliveries.delivered"] == "0" && lines.last?.metadata["deliveries.dead"] == "1",
                "each report counts only what came since the last")
    }
}
