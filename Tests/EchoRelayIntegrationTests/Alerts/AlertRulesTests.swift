import Foundation
import Testing
import TestSupport

/// docs/alerts.yml, checked with Prometheus's own promtool (Debian's `prometheus` package,
/// which scripts/test installs): the rules load, and each alert fires on the series in
/// alerts-test.yml that should make it fire and stays quiet on those beside them that should
/// not. MetricsTests checks that the series the rules name are the ones a real scrape shows.
@Suite struct AlertRulesTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let rules = folder.appendingPathComponent("../../../docs/alerts.yml").standardized

    @Test func theRulesLoad() async throws {
        let checked = try await Promtool.run(["check", "rules", Self.rules.path])
        #expect(checked.status == 0, "\(checked.output)")
        #expect(checked.output.contains("SUCCESS"))
    }

    @Test func eachAlertFiresOnItsFailureAndNotBesideIt() async throws {
        let tested = try await Promtool.run(["test", "rules", "alerts-test.yml"], in: Self.folder)
        #expect(tested.status == 0, "\(tested.output)")
        #expect(tested.output.contains("SUCCESS"))
    }

    /// A rule added without a test would pass the test above unseen: every alert must be
    /// tested both firing and quiet.
    @Test func everyAlertHasATestThatFiresItAndOneThatDoesNot() throws {
        let alerts = try Self.names(after: "- alert: ", in: Self.rules)
        #expect(alerts.count >= 9)
        let tests = try String(contentsOf: Self.folder.appendingPathComponent("alerts-test.yml"), encoding: .utf8)
        for alert in alerts {
            let blocks = tests.components(separatedBy: "alertname: \(alert)\n").dropFirst()
            #expect(blocks.contains { $0.drop { $0 == " " }.hasPrefix("exp_alerts: []") }, "\(alert) is never shown quiet")
            #expect(blocks.contains { $0.drop { $0 == " " }.hasPrefix("exp_alerts:\n") }, "\(alert) is never shown firing")
        }
    }

    static func names(after marker: String, in file: URL) throws -> [String] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").compactMap { line in
            let text = line.drop { $0 == " " }
            return text.hasPrefix(marker) ? String(text.dropFirst(marker.count)) : nil
        }
    }
}

/// Prometheus's promtool, found on PATH.
enum Promtool {
    static func run(_ arguments: [String], in folder: URL? = nil, input: Data = Data()) async throws -> (status: Int32, output: String) {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
            .map { "\($0)/promtool" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else {
            throw TestSetupError("promtool is missing: scripts/test installs Debian's prometheus package (apt-get install prometheus)")
        }
        let child = try ChildProcess(arguments, workingDirectory: folder, executable: URL(fileURLWithPath: path), input: input)
        let status = try await child.wait()
        return (status, child.standardOutput + child.standardError)
    }
}
