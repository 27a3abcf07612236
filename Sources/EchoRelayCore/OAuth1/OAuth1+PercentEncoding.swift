extension OAuth1 {
    /// RFC 5849 §3.6: the UTF-8 bytes of `value`, with every byte outside the unreserved set
    /// (`ALPHA`, `DIGIT`, `-`, `.`, `_`, `~`) written as `%XX` in upper-case hex.
    ///
    /// Unlike form encoding, a space is `%20`, never `+`.
    public static func percentEncode(_ value: String) -> String {
        var encoded: [UInt8] = []
        encoded.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            if isUnreserved(byte) {
                encoded.append(byte)
            } else {
                encoded.append(UInt8(ascii: "%"))
                encoded.append(upperHexDigits[Int(byte >> 4)])
                encoded.append(upperHexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// Decodes an `application/x-www-form-urlencoded` string — a URL's query or a form body — into
    /// name/value pairs, in order (§3.4.1.3.1, per HTML 4.01 §17.13.4).
    ///
    /// `+` is a space, `%XX` a byte; a pair without `=` has an empty value (`c2` in the RFC's
    /// example); empty pairs (`a=1&&b=2`) are skipped. A malformed escape, or bytes that are
    /// not UTF-8 once decoded, is an error.
    public static func formParameters(_ encoded: String) throws(OAuthRequestError) -> [(String, String)] {
        var parameters: [(String, String)] = []
        for (index, pair) in encoded.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true).enumerated() {
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let rawName = pair[..<(equals ?? pair.endIndex)]
            let rawValue = equals.map { pair[pair.index(after: $0)...] } ?? pair[pair.endIndex...]
            do throws(PercentDecodingFailure) {
                let name = try percentDecode(rawName, plusIsSpace: true)
                let value = try percentDecode(rawValue, plusIsSpace: true)
                parameters.append((name, value))
            } catch {
                throw OAuthRequestError("form-encoded pair \(index + 1) \(error.explanation)")
            }
        }
        return parameters
    }

    /// `application/x-www-form-urlencoded` encoding of pairs, with §3.6 percent-encoding
    /// (which every form decoder reads back to the same pairs).
    public static func formEncode(_ parameters: [(String, String)]) -> String {
        parameters.map { percentEncode($0.0) + "=" + percentEncode($0.1) }.joined(separator: "&")
    }

    // MARK: - Internals

    static let upperHexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    /// Why a percent-encoded text could not be decoded; the text itself is never kept.
    enum PercentDecodingFailure: Error {
        case malformedEscape
        case notUTF8

        var explanation: String {
            switch self {
            case .malformedEscape: "has a malformed percent escape (% must be followed by two hex digits)"
            case .notUTF8: "is not UTF-8 once percent-decoded"
            }
        }
    }

    /// `%XX` → byte (either case of hex digit); with `plusIsSpace`, `+` → space. The result must be UTF-8.
    static func percentDecode(
        _ encoded: some Collection<UInt8>, plusIsSpace: Bool
    ) throws(PercentDecodingFailure) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoded.count)
        var index = encoded.startIndex
        while index != encoded.endIndex {
            let byte = encoded[index]
            encoded.formIndex(after: &index)
            switch byte {
            case UInt8(ascii: "%"):
                guard index != encoded.endIndex, let high = hexValue(encoded[index]) else { throw .malformedEscape }
                encoded.formIndex(after: &index)
                guard index != encoded.endIndex, let low = hexValue(encoded[index]) else { throw .malformedEscape }
                encoded.formIndex(after: &index)
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+") where plusIsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notUTF8 }
        return text
    }
}
