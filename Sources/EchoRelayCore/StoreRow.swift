import Foundation

/// A result row of either store, read by column position, so that each Core type is made
/// from a row in one place while each store keeps its own SQL. The stores hide how a value
/// is kept: a time is PostgreSQL's timestamptz or SQLite's integer microseconds, a list of
/// names a `text[]` or a JSON array. A value of the wrong type is an error that never
/// carries the value.
public protocol StoreRow {
    func string(_ column: Int) throws -> String
    func optionalString(_ column: Int) throws -> String?
    func int64(_ column: Int) throws -> Int64
    func int(_ column: Int) throws -> Int
    func optionalInt(_ column: Int) throws -> Int?
    func bool(_ column: Int) throws -> Bool
    func date(_ column: Int) throws -> Date
    func optionalDate(_ column: Int) throws -> Date?
    func optionalBytes(_ column: Int) throws -> [UInt8]?
    func stringArray(_ column: Int) throws -> [String]
}

extension StoreRow {
    /// A JSON document stored as text (a filter); one that does not parse reads as nil.
    public func optionalJSON(_ column: Int) throws -> JSONValue? {
        try optionalString(column).flatMap { try? JSONValue.parse(Array($0.utf8)) }
    }

    /// A text column as one of the cases of `T`. Any other text is `StoreError.unexpected`
    /// naming `what` was unknown ("type of event evt_1"), not the text itself.
    public func value<T: RawRepresentable>(_ column: Int, _ what: @autoclosure () -> String) throws -> T
    where T.RawValue == String {
        guard let value = T(rawValue: try string(column)) else { throw StoreError.unexpected("unknown \(what())") }
        return value
    }
}
