import Foundation

/// Durations as operators write them: `500ms`, `5s`, `2m`, `1h`, `1d`; a bare number is seconds.
public enum DurationText {
    public static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        for (suffix, scale) in units where trimmed.hasSuffix(suffix) {
            let number = String(trimmed.dropLast(suffix.count))
            // "5ms" also ends in "s": only accept the longest suffix whose prefix is a number.
            if let value = Double(number), value >= 0, value.isFinite { return .milliseconds(Int64((value * scale * 1000).rounded())) }
        }
        if let value = Double(trimmed), value >= 0, value.isFinite { return .milliseconds(Int64((value * 1000).rounded())) }
        return nil
    }

    /// A comma-separated list such as `1s,5s,15s`. An empty text is an empty list.
    public static func parseList(_ text: String) -> [Duration]? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: true)
        var result: [Duration] = []
        for part in parts {
            guard let duration = parse(String(part)) else { return nil }
            result.append(duration)
        }
        return result
    }

    public static func format(_ duration: Duration) -> String {
        let ms = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        if ms % 1000 != 0 { return "\(ms)ms" }
        let s = ms / 1000
        if s != 0, s % 3600 == 0 { return "\(s / 3600)h" }
        if s != 0, s % 60 == 0 { return "\(s / 60)m" }
        return "\(s)s"
    }
}

extension Duration {
    /// In seconds, fractions included: for SQL intervals and for `Date` arithmetic.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
