import Foundation

/// Rules every text from outside must pass before it is stored or looked up.
public enum TextRules {
    /// Databases refuse U+0000 in text (PostgreSQL) or cut the text at it (SQLite), so it is
    /// refused at the door, naming the field, instead of failing or changing in the store.
    public static let nulReason = "must not contain a NUL character (U+0000)"

    public static func containsNUL(_ text: String) -> Bool {
        text.utf8.contains(0)
    }

    /// Text from outside that is stored, not refused (a subscriber's answer): NUL, which
    /// PostgreSQL's text cannot hold, becomes U+FFFD, so the record is written rather than lost.
    public static func storable(_ text: String) -> String {
        containsNUL(text) ? text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : text
    }

    /// Times outside years 1–9999 cannot be written as RFC 3339 text that every store reads
    /// back (PostgreSQL has no year 0).
    public static let timeRangeReason = "must be a date-time from year 1 to 9999"

    public static func isInStoredRange(_ date: Date) -> Bool {
        date >= Date(timeIntervalSince1970: -62_135_596_800) && date < Date(timeIntervalSince1970: 253_402_300_800)
    }
}
