import Foundation
@testable import EchoRelayPostgres
import Testing

/// The benchmark's "own" ceiling (Benchmarks/pgbench/ingest-own.sql) runs EchoRelay's ingest
/// statement under pgbench; it is only a fair ceiling while it is that statement.
@Suite struct IngestStatementTests {
    @Test func theBenchmarksOwnCeilingRunsTheIngestStatement() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("Benchmarks/pgbench/ingest-own.sql"), encoding: .utf8)
        let script = file.split(separator: "\n", omittingEmptySubsequences: false)
            .drop { $0.hasPrefix("--") || $0.hasPrefix("\\set") }.joined(separator: "\n")
        // The substitutions the file's header describes, for one event in one transaction.
        var expected = IngestStatement.sql
        for (parameter, value) in [
            ("$1::text[]", "ARRAY[:id::text]"), ("$2::text[]", "ARRAY[:user::text]"),
            ("$3::text[]", "ARRAY[CASE WHEN :phone THEN 'phone.changed' ELSE 'token.rotated' END]"),
            ("$4::timestamptz[]", "ARRAY[:occurred_at::timestamptz]"), ("$5::bytea[]", "ARRAY[:fingerprint::bytea]"),
            ("$6::text[]", "ARRAY[CASE WHEN :phone THEN :phone_number::text ELSE '' END]"),
            ("$7::text[]", "ARRAY[:service_provider::text]"), ("$8::text[]", "ARRAY[:authorization::text]"), ("$9", "NULL::text"),
            ("$10::text", "NULL::text"), ("$11::float8", "NULL::float8"),
        ] {
            #expect(expected.contains(parameter), "the statement no longer has \(parameter)")
            expected = expected.replacingOccurrences(of: parameter, with: value)
        }
        #expect(script.trimmingCharacters(in: .whitespacesAndNewlines) == expected.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
