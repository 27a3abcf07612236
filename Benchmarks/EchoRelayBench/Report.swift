import Foundation

/// The figures of one run, and their ratios to the same run's pgbench ceiling.
struct Report {
    struct IngestPoint {
        let connections: Int
        let rate: Double
        let failed: Int
        /// Cores the serve process used on average during the point.
        let serveCPU: Double
    }

    let ceilingIngest: [Int: Double]
    let ceilingClaim: [Int: Double]
    let subscriptions: Int
    var ingest: [IngestPoint] = []
    var ingestPeakResident: Int?
    var claim: (rate: Double, ranDry: Bool)?
    var latency: [LatencyStep] = []
    var peakResident: Int?
    var storage: (events: Int, bytes: Int)?
    var badSignatures = 0

    private func ratio(_ value: Double, _ ceiling: Double?) -> String {
        guard let ceiling, ceiling > 0 else { return "–" }
        return String(format: "%.2f×", value / ceiling)
    }

    private func number(_ value: Double) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.maximumFractionDigits = 0
        return formatter.string(from: NSNumber(value: value.rounded())) ?? "\(Int(value))"
    }

    private func megabytes(_ bytes: Int?) -> String {
        bytes.map { String(format: "%.0f MB", Double($0) / 1_000_000) } ?? "–"
    }

    func markdown(seconds: Int, users: Int) -> String {
        var lines: [String] = []
        let bestIngestCeiling = ceilingIngest.values.max()
        lines.append("| figure | EchoRelay | pgbench ceiling, same run | ratio | target |")
        lines.append("| --- | ---: | ---: | ---: | --- |")
        for point in ingest {
            let ceiling = ceilingIngest[point.connections]
            let target = point.connections == 1 ? "" : "≥ 0.8× (group commit: aim ≥ 1.5×)"
            lines.append("| HTTP ingest, \(point.connections) connection\(point.connections == 1 ? "" : "s") | \(number(point.rate)) events/s (serve \(String(format: "%.2f", point.serveCPU)) cores) | \(ceiling.map { number($0) + " tx/s" } ?? "–") | \(ratio(point.rate, ceiling)) | \(target) |")
        }
        if let claim {
            let ceiling = ceilingClaim[8]
            lines.append("| claim-and-complete, 8 claimers × 50 | \(number(claim.rate)) items/s\(claim.ranDry ? " (ran dry)" : "") | \(ceiling.map { number($0) + " items/s" } ?? "–") | \(ratio(claim.rate, ceiling)) | ≥ 0.7× |")
        }
        let sustained = latency.filter { $0.sustained(subscriptions: subscriptions) }.map(\.offeredRate).max()
        if let sustained {
            lines.append("| end to end, highest sustained offered rate | \(number(Double(sustained))) events/s | \(bestIngestCeiling.map { number($0) + " tx/s (best)" } ?? "–") | \(ratio(Double(sustained), bestIngestCeiling)) | ≥ 0.5× |")
        } else {
            lines.append("| end to end, highest sustained offered rate | none of the rates tried | | | ≥ 0.5× |")
        }
        if let at200 = latency.first(where: { $0.offeredRate == 200 }) {
            lines.append("| end to end p99 at 200 events/s | \(String(format: "%.1f ms", at200.p99)) | | | ≤ 50 ms |")
        }
        lines.append("| serve peak RSS, end to end | \(megabytes(peakResident)) | | | ≤ 150 MB |")
        lines.append("| serve peak RSS, ingest only | \(megabytes(ingestPeakResident)) | | | |")
        if let storage, storage.events > 0 {
            let perMillion = Double(storage.bytes) / Double(storage.events) * 1_000_000
            lines.append("| database bytes per million events (\(subscriptions) deliveries each) | \(String(format: "%.2f GB", perMillion / 1e9)) | | | |")
        }
        lines.append("")
        lines.append("| offered events/s | delivered events/s | p50 ms | p99 ms | p99.9 ms | max ms | backlog mid → end | sustained |")
        lines.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for step in latency {
            lines.append(String(format: "| %d | %.0f | %.1f | %.1f | %.1f | %.1f | %d → %d | ", step.offeredRate, step.deliveredRate,
                                step.p50, step.p99, step.p999, step.max, step.backlogMiddle, step.backlogEnd)
                         + (step.sustained(subscriptions: subscriptions) ? "yes |" : "no |"))
        }
        let outOfOrder = latency.map(\.outOfOrder).reduce(0, +)
        let duplicates = latency.map(\.duplicates).reduce(0, +)
        lines.append("")
        lines.append("\(seconds) s per point, events over \(users) users, \(subscriptions) ordered subscriptions. Deliveries out of order: \(outOfOrder); duplicates: \(duplicates); bad signatures: \(badSignatures).")
        return lines.joined(separator: "\n")
    }

    var csv: String {
        var lines = ["offered_per_s,delivered_per_s,p50_ms,p99_ms,p999_ms,max_ms,sustained"]
        for step in latency {
            lines.append(String(format: "%d,%.1f,%.3f,%.3f,%.3f,%.3f,", step.offeredRate, step.deliveredRate, step.p50, step.p99,
                                step.p999, step.max) + (step.sustained(subscriptions: subscriptions) ? "yes" : "no"))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
