import Foundation

/// Splits a SQL script into single statements, because both drivers run one statement at a
/// time (postgres-nio's extended protocol; SQLite prepares only the first). Semicolons inside
/// quotes (`'…'`, `"…"`, and SQLite's `` `…` `` and `[…]`), PostgreSQL dollar-quoted bodies
/// and comments do not split. (SQLite trigger bodies, `BEGIN … END` with semicolons inside,
/// are not supported: the schema has none.)
public enum SQLScript {
    public static func statements(_ script: String) -> [String] {
        let chars = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0

        func flush() {
            let statement = String(current).trimmingWhitespaceAndComments()
            if !statement.isEmpty { statements.append(statement) }
            current = String.UnicodeScalarView()
        }
        func copy(until end: Int) {
            current.append(contentsOf: chars[index..<end])
            index = end
        }
        func find(_ needle: [Unicode.Scalar], from start: Int) -> Int {
            var i = start
            while i + needle.count <= chars.count {
                if Array(chars[i..<i + needle.count]) == needle { return i + needle.count }
                i += 1
            }
            return chars.count
        }

        while index < chars.count {
            let c = chars[index]
            let next = index + 1 < chars.count ? chars[index + 1] : nil
            switch c {
            case "'", "\"", "`":
                // Quoted literal or identifier; a doubled quote is an escaped quote.
                var end = index + 1
                while end < chars.count {
                    if chars[end] == c {
                        if end + 1 < chars.count, chars[end + 1] == c { end += 2; continue }
                        end += 1
                        break
                    }
                    end += 1
                }
                copy(until: min(end, chars.count))
            case "[":
                copy(until: find(["]"], from: index + 1))
            case "-" where next == "-":
                copy(until: find(["\n"], from: index))
            case "/" where next == "*":
                copy(until: find(["*", "/"], from: index + 2))
            case "$":
                // $tag$ … $tag$ (the tag may be empty).
                var end = index + 1
                while end < chars.count, chars[end] == "_" || chars[end].properties.isAlphabetic
                    || ("0"..."9").contains(chars[end]) { end += 1 }
                if end < chars.count, chars[end] == "$" {
                    let tag = Array(chars[index...end])
                    copy(until: find(tag, from: end + 1))
                } else {
                    copy(until: index + 1)
                }
            case ";":
                index += 1
                flush()
            default:
                copy(until: index + 1)
            }
        }
        flush()
        return statements
    }
}

extension String {
    /// The text without surrounding white space, and empty if it holds only comments.
    fileprivate func trimmingWhitespaceAndComments() -> String {
        let trimmed = self.trimmingCharacters(in: .whitespacesAndNewlines)
        let meaningful = trimmed.split(separator: "\n").contains { line in
            let text = line.trimmingCharacters(in: .whitespaces)
            return !text.isEmpty && !text.hasPrefix("--")
        }
        return meaningful ? trimmed : ""
    }
}
