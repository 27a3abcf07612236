import Foundation
@testable import EchoRelayPostgres
import PostgresNIO
import Testing

/// The benchmark's claim part (Benchmarks/pgbench/claim-deliveries.sql) runs the delivery
/// claim under pgbench; it measures the worker only while it is the worker's statement.
@Suite struct ClaimStatementTests {
    @Test func theBenchmarksClaimRunsTheWorkersClaimStatement() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("Benchmarks/pgbench/claim-deliveries.sql"), encoding: .utf8)
        let script = file.split(separator: "\n", omittingEmptySubsequences: false)
            .drop { $0.hasPrefix("--") || $0.hasPrefix("\\set") }.joined(separator: "\n")
        let statement = try #require(script.components(separatedBy: ";\n").first)
        // Each pgbench variable stands for one bound parameter, numbered by first appearance.
        var numbered = ""
        var parameters: [Substring: Int] = [:]
        var rest = Substring(statement)
        while let match = rest.firstMatch(of: /(^|[^:]):(answered|cap|limit|owner|lease_seconds)\b/) {
            let parameter = parameters[match.output.2] ?? parameters.count + 1
            parameters[match.output.2] = parameter
            // The match takes the character before the colon with it; keep that character.
            numbered += rest[..<match.range.lowerBound] + match.output.1 + "$\(parameter)"
            rest = rest[match.range.upperBound...]
        }
        numbered += rest
        #expect(Self.words(numbered) == Self.words(ClaimDeliveriesStatement.sql))
        #expect(parameters.count == ClaimDeliveriesStatement.bindingDataTypes.count)
    }

    /// Its finish is the worker's statement that records attempts, with `:attempts` for its
    /// one parameter.
    @Test func theBenchmarksFinishRunsTheWorkersRecordStatement() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("Benchmarks/pgbench/claim-deliveries.sql"), encoding: .utf8)
        let record = try #require(file.components(separatedBy: "\\gset\n").last?.components(separatedBy: ";\n").first)
        #expect(Self.words(record.replacingOccurrences(of: ":attempts::jsonb", with: "$1::jsonb"))
                == Self.words(RecordAttemptsStatement.sql))
        #expect(RecordAttemptsStatement.bindingDataTypes.count == 1)
    }

    /// The text with every run of white space as one space: the file indents differently.
    static func words(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}
