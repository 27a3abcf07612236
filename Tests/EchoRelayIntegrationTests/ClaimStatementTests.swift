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
        // Each pgbench variable in turn stands for the next bound parameter.
        var numbered = ""
        var parameter = 0
        var rest = Substring(statement)
        while let match = rest.firstMatch(of: /(^|[^:]):(cap|limit|owner|lease_seconds)\b/) {
            parameter += 1
            // The match takes the character before the colon with it; keep that character.
            numbered += rest[..<match.range.lowerBound] + match.output.1 + "$\(parameter)"
            rest = rest[match.range.upperBound...]
        }
        numbered += rest
        #expect(Self.words(numbered) == Self.words(ClaimDeliveriesStatement.sql))
        #expect(parameter == ClaimDeliveriesStatement.bindingDataTypes.count)
    }

    /// The text with every run of white space as one space: the file indents differently.
    static func words(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}
