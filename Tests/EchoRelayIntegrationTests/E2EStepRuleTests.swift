import Foundation
import Testing
import TestSupport

/// The end-to-end benchmark's rule for a sustained step (`Benchmarks/e2e/analyse.py step`),
/// run on made-up pacer and subscriber logs: 100 events/s offered for 10 s, each event
/// completing when `completes(i)` says, at both subscribers.
@Suite struct E2EStepRuleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let rate = 100, seconds = 10, start = 1_800_000_000.0

    @Test func aStepWhoseEventsCompleteAtOnceIsSustained() throws {
        #expect(try Self.sustained { Self.intended($0) + 0.005 } == "yes")
    }

    /// A slow but steady pipeline keeps pace: its backlog holds at rate × latency.
    @Test func aStepWithALongButSteadyLatencyIsSustained() throws {
        #expect(try Self.sustained { Self.intended($0) + 0.4 } == "yes")
    }

    /// 95 a second completed of 100 offered: the backlog grows by 25 over the second half,
    /// more than a tenth of a second's offer (10). The rule before allowed a quarter (25).
    @Test func aStepWhoseBacklogGrowsIsNotSustained() throws {
        #expect(try Self.sustained { Double($0) / 95.0 + Self.start + 0.005 } == "no")
    }

    @Test func aStepWithARefusedRequestIsNotSustained() throws {
        #expect(try Self.sustained(refusing: 500) { Self.intended($0) + 0.005 } == "no")
    }

    static func intended(_ i: Int) -> Double { start + Double(i) / Double(rate) }

    /// `sustained=` of analyse.py's step line.
    static func sustained(refusing refused: Int? = nil, completes: (Int) -> Double) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-rule-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var pace = "event_id\tintended\tsent\tanswered\tstatus\tretry_after\n"
        var log = ""
        for i in 0..<(rate * seconds) {
            let at = intended(i), status = i == refused ? 503 : 202
            pace += "evt_\(i)\t\(at)\t\(at + 0.001)\t\(at + 0.002)\t\(status)\t\n"
            guard status == 202 else { continue }
            // nginx's escape=json of the delivery body.
            let body = #"{\"event_id\":\"evt_\#(i)\",\"user_id\":\"u\#(i % 50)\",\"sequence\":\#(i / 50 + 1)}"#
            log += String(format: "%.3f", completes(i)) + "\tmsg_\(i)\t\(body)\n"
        }
        let files = ["pace.tsv": pace, "a.log": log, "b.log": log]
        for (name, text) in files { try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        let run = try Spawned("/usr/bin/env", [
            "python3", root.appendingPathComponent("Benchmarks/e2e/analyse.py").path, "step",
            folder.appendingPathComponent("pace.tsv").path, folder.appendingPathComponent("a.log").path,
            folder.appendingPathComponent("b.log").path, "--rate", "\(rate)", "--seconds", "\(seconds)",
        ])
        run.waitUntilExit()
        let output = String(decoding: run.standardOutput, as: UTF8.self)
        try #require(run.status == 0, "analyse.py failed: \(String(decoding: run.standardError, as: UTF8.self))")
        let field = output.split(separator: " ").first { $0.hasPrefix("sustained=") }
        return try #require(field).dropFirst("sustained=".count).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
