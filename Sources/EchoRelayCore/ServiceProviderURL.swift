/// A conservative byte-level test for the common shape of `echo.service_provider`,
/// `https://api.example.com[:port]/path[?query]`, which `URLComponents(string:)` certainly
/// parses with a non-empty scheme and host.
///
/// Invariant: it never says yes to a URL that `URLComponents` would refuse or give an empty
/// scheme or host; it may say no to a good one, which `EventFieldRules` then checks the slow way.
/// What makes the yes certain, in swift-foundation's RFC 3986 parser on Linux:
/// - the scheme is letters only, so it validates and ends at the first `:`;
/// - the authority (up to the first `/` or `?`) holds no `@`, `[`, `]`, `%` or `:` but the port's,
///   so the host is the whole of it before the port and needs no percent-encoding;
/// - the host is dot-separated labels of letters, digits and inner hyphens, none empty, none
///   longer than 63, no `--` (so no `xn--` punycode label), 253 bytes at most: the IDNA
///   decoding that `URLComponents.host` applies (ICU UTS #46) maps such a name to itself in
///   lower case and reports no error;
/// - the port is 1–5 digits; path and query are RFC 3986 `pchar`s, `/` and `?`, with `%`
///   only before two hex digits, so neither needs encoding; there is no fragment.
enum ServiceProviderURL {
    static func isCertainlyAbsolute(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { isCertainlyAbsolute(bytes: $0) }
    }

    private static func isCertainlyAbsolute(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        func at(_ position: Int) -> UInt8 { position < bytes.count ? bytes[position] : 0 }

        // Scheme: letters, then "://".
        while isLetter(at(index)) { index += 1 }
        guard index > 0, at(index) == UInt8(ascii: ":"), at(index + 1) == UInt8(ascii: "/"),
              at(index + 2) == UInt8(ascii: "/") else { return false }
        index += 3

        // Host: labels of letters and digits with hyphens inside, joined by single dots.
        let hostStart = index
        var labelStart = index
        while true {
            while isLetter(at(index)) || isDigit(at(index)) || at(index) == UInt8(ascii: "-") { index += 1 }
            let label = UnsafeBufferPointer(rebasing: bytes[labelStart..<index])
            guard let first = label.first, let last = label.last, first != UInt8(ascii: "-"), last != UInt8(ascii: "-"),
                  label.count <= 63, !containsDoubleHyphen(label) else { return false }
            guard at(index) == UInt8(ascii: ".") else { break }
            index += 1
            labelStart = index
        }
        guard index - hostStart <= 253 else { return false }

        // Port: one to five digits.
        if at(index) == UInt8(ascii: ":") {
            index += 1
            let portStart = index
            while isDigit(at(index)) { index += 1 }
            guard (1...5).contains(index - portStart) else { return false }
        }

        // Path, then query: nothing else may follow the authority.
        guard index == bytes.count || at(index) == UInt8(ascii: "/") || at(index) == UInt8(ascii: "?") else { return false }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard isHexDigit(at(index + 1)), isHexDigit(at(index + 2)) else { return false }
                index += 3
            } else if isPathOrQueryCharacter(byte) {
                index += 1
            } else {
                return false
            }
        }
        return true
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    /// RFC 3986 `pchar` (unreserved, sub-delims, `:` and `@`) and `/` and `?`, `%` aside.
    private static func isPathOrQueryCharacter(_ byte: UInt8) -> Bool {
        if isLetter(byte) || isDigit(byte) { return true }
        switch byte {
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
             UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
             UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
             UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"):
            return true
        default:
            return false
        }
    }

    private static func containsDoubleHyphen(_ label: UnsafeBufferPointer<UInt8>) -> Bool {
        label.count > 1 && zip(label, label.dropFirst()).contains { $0 == UInt8(ascii: "-") && $1 == UInt8(ascii: "-") }
    }
}
