import EchoRelayCore
import Foundation
import SQLiteNIO

/// A Swift value that binds to a statement parameter. Dates bind as INTEGER microseconds,
/// the schema's one time format (not SQLiteNIO's floating-point seconds).
protocol SQLiteBind {
    var sqliteData: SQLiteData { get }
}

extension String: SQLiteBind {
    var sqliteData: SQLiteData { .text(self) }
}

extension Int: SQLiteBind {
    var sqliteData: SQLiteData { .integer(SQLiteInt64(self)) }
}

extension Int64: SQLiteBind {
    var sqliteData: SQLiteData { .integer(SQLiteInt64(self)) }
}

extension Bool: SQLiteBind {
    var sqliteData: SQLiteData { .integer(self ? 1 : 0) }
}

extension Date: SQLiteBind {
    var sqliteData: SQLiteData { .integer(SQLiteInt64(SQLiteTime.microseconds(self))) }
}

/// Bytes (hashes, fingerprints) bind as a BLOB.
struct Blob: SQLiteBind {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var sqliteData: SQLiteData { .blob(ByteBuffer(bytes: bytes)) }
}

/// A JSON document (arrays of names or row ids, filters) binds as TEXT.
struct JSONText: SQLiteBind {
    let text: String
    init(_ value: JSONValue) { text = String(decoding: value.canonicalEncoding(), as: UTF8.self) }
    init(_ strings: [String]) { self.init(.array(strings.map(JSONValue.string))) }
    /// Row ids, to read back with `json_each`.
    init(_ ids: [Int64]) { text = "[" + ids.map(String.init).joined(separator: ",") + "]" }
    var sqliteData: SQLiteData { .text(text) }
}

extension Optional: SQLiteBind where Wrapped: SQLiteBind {
    var sqliteData: SQLiteData { self?.sqliteData ?? .null }
}

/// One result row, read by column position (`StoreRow`). A value of the wrong type is a
/// `StoreError.unexpected` naming the column, never its content.
struct Row: StoreRow {
    let values: [SQLiteData]
    let names: [String]

    init(_ row: SQLiteRow) {
        let columns = row.columns
        values = columns.map(\.data)
        names = columns.map(\.name)
    }

    private func mismatch(_ index: Int, _ expected: String) -> StoreError {
        .unexpected("column \(index < names.count ? names[index] : "#\(index)") is not \(expected)")
    }

    func isNull(_ index: Int) -> Bool { values[index].isNull }

    func string(_ index: Int) throws -> String {
        guard case .text(let value) = values[index] else { throw mismatch(index, "text") }
        return value
    }

    func optionalString(_ index: Int) throws -> String? {
        isNull(index) ? nil : try string(index)
    }

    func int64(_ index: Int) throws -> Int64 {
        guard case .integer(let value) = values[index] else { throw mismatch(index, "an integer") }
        return Int64(value)
    }

    func optionalInt64(_ index: Int) throws -> Int64? {
        isNull(index) ? nil : try int64(index)
    }

    func int(_ index: Int) throws -> Int { Int(try int64(index)) }

    func optionalInt(_ index: Int) throws -> Int? { try optionalInt64(index).map(Int.init) }

    func bool(_ index: Int) throws -> Bool { try int64(index) != 0 }

    func date(_ index: Int) throws -> Date { SQLiteTime.date(try int64(index)) }

    func optionalDate(_ index: Int) throws -> Date? { try optionalInt64(index).map(SQLiteTime.date) }

    func bytes(_ index: Int) throws -> [UInt8] {
        guard case .blob(let buffer) = values[index] else { throw mismatch(index, "a blob") }
        return Array(buffer.readableBytesView)
    }

    func optionalBytes(_ index: Int) throws -> [UInt8]? {
        isNull(index) ? nil : try bytes(index)
    }

    /// A JSON array of strings (subscription event types).
    func stringArray(_ index: Int) throws -> [String] {
        guard case .array(let items)? = try? JSONValue.parse(Array(try string(index).utf8)) else {
            throw mismatch(index, "a JSON array")
        }
        return items.compactMap(\.stringValue)
    }
}

/// Times are INTEGER microseconds since the Unix epoch: exact to compare and order, and the
/// precision of PostgreSQL's timestamptz.
enum SQLiteTime {
    static func now() -> Int64 { microseconds(Date()) }

    static func microseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    static func date(_ microseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
    }
}

extension Duration {
    /// Whole microseconds, to add to an INTEGER time.
    var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }
}
