import Foundation

/// The members a value's `Encodable` conformance writes at its top level, each whether it
/// holds a value or not: an `encodeIfPresent` of nil is recorded too, so that a wire type's
/// coding keys can be held to its schema both ways (OpenAPITests). Member values are not
/// descended into; nested types are recorded on their own.
enum CodingKeyRecorder {
    static func keys(of value: any Encodable) throws -> Set<String> {
        let encoder = Recorder()
        try value.encode(to: encoder)
        return encoder.keys
    }

    private final class Recorder: Encoder {
        var keys: Set<String> = []
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(Keys<Key>(recorder: self))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            preconditionFailure("a wire type is an object at its top level")
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            preconditionFailure("a wire type is an object at its top level")
        }
    }

    private struct Keys<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }

        private func record(_ key: Key) { recorder.keys.insert(key.stringValue) }

        mutating func encodeNil(forKey key: Key) throws { record(key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: String, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: Double, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: Float, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { record(key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { record(key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { record(key) }
        // The standard library's own versions of these skip a nil without naming its key.
        mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { record(key) }
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { record(key) }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            record(key)
            return KeyedEncodingContainer(Keys<NestedKey>(recorder: Recorder()))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            preconditionFailure("the wire types nest no containers by hand")
        }

        mutating func superEncoder() -> any Encoder { Recorder() }
        mutating func superEncoder(forKey key: Key) -> any Encoder {
            record(key)
            return Recorder()
        }
    }
}
