/// The `Content-Type` EchoRelay accepts for JSON bodies, checked byte by byte (it runs on
/// every ingest): `application/json`, in any letter case, with optional parameters, where a
/// `charset` parameter may only say UTF-8 (`charset=utf-8` or `charset="utf-8"`). White space
/// around each part is the header's optional white space (spaces and tabs).
public enum MediaType {
    public static func isJSON(_ value: String?) -> Bool {
        guard var value else { return false }
        return value.withUTF8 { bytes in
            var parts = bytes.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false).makeIterator()
            guard let type = parts.next(), equalsIgnoringCase(trimmed(type), "application/json") else { return false }
            while let parameter = parts.next().map(trimmed) {
                guard startsIgnoringCase(parameter, "charset=") else { continue }
                let charset = parameter.dropFirst("charset=".utf8.count)
                guard equalsIgnoringCase(charset, "utf-8") || equalsIgnoringCase(charset, "\"utf-8\"") else { return false }
            }
            return true
        }
    }

    private static func trimmed(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Slice<UnsafeBufferPointer<UInt8>> {
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return bytes[bytes.startIndex..<bytes.startIndex]
        }
        return bytes[first...last]
    }

    private static func equalsIgnoringCase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lowercase: StaticString) -> Bool {
        bytes.count == lowercase.utf8CodeUnitCount && startsIgnoringCase(bytes, lowercase)
    }

    private static func startsIgnoringCase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lowercase: StaticString) -> Bool {
        guard bytes.count >= lowercase.utf8CodeUnitCount else { return false }
        let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        return zip(bytes, expected).allSatisfy { byte, want in
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == want
        }
    }
}
