import EchoRelayCore
import Foundation
import Hummingbird

/// The fields of an `application/x-www-form-urlencoded` body, as a browser posts a form.
/// The console turns them into the JSON of the matching API request and parses that with the
/// API's own parser, so a form and an API call are held to exactly the same rules and name
/// the same fields in their errors.
struct ConsoleForm {
    private(set) var fields: [(name: String, value: String)] = []

    init(fields: [(name: String, value: String)]) {
        self.fields = fields
    }

    init(_ body: some Collection<UInt8>) {
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            fields.append((Self.decode(parts[0]), parts.count == 2 ? Self.decode(parts[1]) : ""))
        }
    }

    static func read(_ request: Request) async throws -> ConsoleForm {
        ConsoleForm(try await request.body.collect(upTo: EchoRelayRequestContext.maxBodySize).readableBytesView)
    }

    /// The first value of `name`, or nil when it is missing.
    func value(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// Every non-empty value of `name` (checkboxes, multiple selections).
    func values(_ name: String) -> [String] {
        fields.filter { $0.name == name && !$0.value.isEmpty }.map(\.value)
    }

    /// A JSON object of the named fields: a text field left empty is left out (as the API
    /// treats a missing field), list fields become arrays.
    func json(strings: [String], lists: [String] = []) -> JSONValue {
        var object: [String: JSONValue] = [:]
        for name in strings {
            if let value = value(name), !value.trimmingCharacters(in: .whitespaces).isEmpty {
                object[name] = .string(value)
            }
        }
        for name in lists {
            let values = values(name)
            if !values.isEmpty { object[name] = .array(values.map(JSONValue.string)) }
        }
        return .object(object)
    }

    /// `+` is a space; `%XX` a byte. Bytes that are not UTF-8 become U+FFFD.
    private static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                let high = iterator.next(), low = iterator.next()
                if let high, let low, let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) {
                    bytes.append(value)
                } else {
                    bytes.append(byte)
                    if let high { bytes.append(high) }
                    if let low { bytes.append(low) }
                }
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
