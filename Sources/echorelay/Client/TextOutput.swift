import EchoRelayCore
import Foundation

/// Aligned tables and `key: value` blocks for the client verbs' readable output.
enum TextOutput {
    /// Columns padded to their widest cell and separated by two spaces; the last column is
    /// not padded, so no line ends in spaces.
    static func table(_ header: [String], _ rows: [[String]], indent: String = "") -> String {
        let all = [header] + rows.map { $0.map(cell) }
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { row in
            indent + row.indices.map { column in
                column == row.count - 1 ? row[column] : padded(row[column], to: widths[column])
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// `key:` labels padded to one width, so the values line up.
    static func block(_ pairs: [(String, String)], indent: String = "") -> String {
        let width = (pairs.map(\.0.count).max() ?? 0) + 1
        return pairs.map { key, value in
            indent + padded(key + ":", to: width) + "  " + cell(value)
        }.joined(separator: "\n")
    }

    static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// One line of safe text. Some values come from subscribers (their answers' first bytes)
    /// and must not move the cursor or recolour the terminal: control characters, escapes
    /// included, become spaces.
    static func cell(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format ? " " : scalar
        }))
    }

    /// At most `limit` characters, ending with … when cut.
    static func shortened(_ text: String, to limit: Int) -> String {
        let single = cell(text)
        return single.count <= limit ? single : String(single.prefix(limit - 1)) + "…"
    }

    /// An optional value, or `-`.
    static func orDash(_ value: String?) -> String {
        guard let value, !value.isEmpty else { return "-" }
        return value
    }

    /// A timestamp to the second, for tables (the API gives microseconds); kept as it came
    /// if it is not RFC 3339.
    static func time(_ text: String?) -> String {
        guard let text else { return "-" }
        guard let date = RFC3339.parse(text) else { return text }
        return RFC3339.format(Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }

    /// A timestamp to the millisecond, always three digits, so the times of one page line up
    /// (the API leaves out trailing zeros); kept as it came if it is not RFC 3339.
    static func instant(_ text: String?) -> String {
        guard let text else { return "-" }
        guard let date = RFC3339.parse(text) else { return text }
        let millis = (date.timeIntervalSince1970 * 1000).rounded(.down)
        let whole = RFC3339.format(Date(timeIntervalSince1970: (millis / 1000).rounded(.down)))
        let fraction = Int(millis.truncatingRemainder(dividingBy: 1000) + 1000) % 1000
        return whole.dropLast() + "." + String(repeating: "0", count: fraction < 10 ? 2 : fraction < 100 ? 1 : 0) + String(fraction) + "Z"
    }

    /// "1 delivery", "2 deliveries".
    static func count(_ number: Int, _ singular: String, _ plural: String) -> String {
        "\(number) \(number == 1 ? singular : plural)"
    }
}
