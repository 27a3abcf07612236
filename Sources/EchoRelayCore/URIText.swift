/// What RFC 3986 lets a URL part hold as written, for the readers that refuse anything a
/// URL parser might re-encode or read another way (OAuth's request URL, a subscriber's URL).
enum URIText {
    /// RFC 3986 `pchar` (unreserved, sub-delims, `:`, `@`, `%XX`) plus the `extra` characters.
    static func isValid(_ part: Substring, allowing extra: String) -> Bool {
        let bytes = Array(part.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count,
                      OAuth1.hexValue(bytes[index + 1]) != nil, OAuth1.hexValue(bytes[index + 2]) != nil
                else { return false }
                index += 3
                continue
            }
            guard OAuth1.isUnreserved(byte) || "!$&'()*+,;=:@".utf8.contains(byte) || extra.utf8.contains(byte)
            else { return false }
            index += 1
        }
        return true
    }
}
