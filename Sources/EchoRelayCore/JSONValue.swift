import Foundation

/// A parsed JSON document, kept generic so the ingest validator can name every offending
/// field instead of stopping at the first decoding error.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses UTF-8 JSON. Throws on invalid UTF-8, invalid JSON, or nesting deeper than
    /// `maximumDepth`.
    public static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws -> JSONValue {
        try checkDepth(bytes)
        return try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// Arrays and objects nest at most this deep. Nothing EchoRelay reads comes close, and
    /// `JSONDecoder` spends about depth³ on deep nesting (fuzzing found a 64 KiB body nested
    /// 511 deep costing ~20 s of CPU), so deeper text is refused before it is decoded.
    public static let maximumDepth = 32

    public struct TooDeep: Error, CustomStringConvertible {
        public var description: String { "JSON nests deeper than \(JSONValue.maximumDepth) levels" }
    }

    /// One linear pass: brackets outside strings, escapes inside them.
    private static func checkDepth<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(TooDeep) {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maximumDepth { throw TooDeep() }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
    }

    /// A stable encoding (sorted keys, no insignificant white space): two documents that mean
    /// the same thing encode to the same bytes, whatever their key order or spacing.
    public func canonicalEncoding() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a JSONValue cannot fail: every case maps onto a JSON primitive.
        return (try? encoder.encode(self)) ?? Data()
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let object) = self { return object }
        return nil
    }

    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    /// The JSON type name, for error messages ("expected a string, got a number").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let integer = try? container.decode(Int64.self) {
            self = .integer(integer)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
