import Foundation
@testable import EchoRelayPostgres
import PostgresNIO
import TestSupport
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

    /// And pgbench runs the script as scripts/bench-claim.bash does (`-M prepared`, the same
    /// variables) on the claim part's backlog: every transaction claims and finishes without
    /// an error. (A parameter pgbench could not type once failed the whole part, unseen here.)
    @Test func pgbenchRunsTheScriptOnTheClaimPartsBacklog() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
            }
            let fill = try await Self.run("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "blocked_users=2", "-v", "per_user=2",
                                                   "-v", "ready=40", "-f", root.appendingPathComponent("Benchmarks/pgbench/claim-backlog.sql").path,
                                                   database.url])
            #expect(fill.status == 0, "psql: \(fill.stderr)")
            // The variables scripts/bench-claim.bash passes (CLAIM_DEFINES).
            let bench = try await Self.run("pgbench", ["-n", "-M", "prepared", "-t", "4", "-D", "lease_seconds=60", "-D", "cap=8",
                                                       "-D", "limit=64", "-D", "answered={}",
                                                       "-f", root.appendingPathComponent("Benchmarks/pgbench/claim-deliveries.sql").path,
                                                       database.url])
            #expect(bench.status == 0, "pgbench: \(bench.stderr)")
            #expect(bench.stdout.contains("number of transactions actually processed: 4/4"), "\(bench.stdout)")
            try await database.withClient { client in
                let rows = try await client.query("SELECT count(*) FROM deliveries WHERE status = 'delivered'")
                for try await delivered in rows.decode(Int.self) {
                    #expect(delivered == 4 * 16, "four claims of 8 a subscription, each finished")
                }
            }
        }
    }

    /// A PostgreSQL client program (psql, pgbench), from the PATH.
    static func run(_ program: String, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess([program] + arguments, executable: URL(fileURLWithPath: "/usr/bin/env"))
        let status = try await child.wait()
        return (status, child.standardOutput, child.standardError)
    }

    /// The text with every run of white space as one space: the file indents differently.
    static func words(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}
