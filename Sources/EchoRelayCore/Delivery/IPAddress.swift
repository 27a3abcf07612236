/// An IPv4 or IPv6 address, as written in a URL host or returned by the resolver.
///
/// Parsing is strict on purpose: only the forms that every parser reads the same way are
/// accepted (a canonical dotted quad; RFC 4291 text for IPv6), so the address that the
/// subscriber URL policy checks is the address a connection would use.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address as a number: `127.0.0.1` is `0x7F00_0001`.
    case v4(UInt32)
    /// The 16 bytes in network order. Any other length is not an address (and is refused).
    case v6([UInt8])

    /// Reads a dotted quad (`192.0.2.1`: four decimal parts 0–255, no leading zeros) or RFC 4291
    /// IPv6 text (`2001:db8::1`, `::ffff:192.0.2.1`), with or without `[` `]` around IPv6.
    /// Zone ids (`fe80::1%eth0`), octal, hex and shortened IPv4 forms are not addresses here.
    public static func parse(_ text: String) -> IPAddress? {
        var text = Substring(text)
        let bracketed = text.hasPrefix("[")
        if bracketed {
            guard text.count >= 2, text.hasSuffix("]") else { return nil }
            text = text.dropFirst().dropLast()
        }
        if text.contains(":") { return parseV6(text).map(IPAddress.v6) }
        return bracketed ? nil : parseV4(text).map(IPAddress.v4)
    }

    /// Dotted quad for IPv4; RFC 5952 text for IPv6 (lower case, the longest run of two or more
    /// zero groups shortened to `::`, IPv4-mapped addresses as `::ffff:a.b.c.d`).
    public var description: String {
        switch self {
        case .v4(let value):
            return Self.dottedQuad(value)
        case .v6(let bytes):
            guard bytes.count == 16 else { return "<invalid IPv6 address>" }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                return "::ffff:" + Self.dottedQuad(Self.lastFourBytes(bytes))
            }
            let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
            // The longest run of zero groups (the first one on a tie), if at least two long.
            var best: Range<Int>? = nil
            var index = 0
            while index < 8 {
                guard groups[index] == 0 else { index += 1; continue }
                var end = index
                while end < 8, groups[end] == 0 { end += 1 }
                if end - index >= 2, end - index > (best?.count ?? 0) { best = index..<end }
                index = end
            }
            let hex = { (range: Range<Int>) in groups[range].map { String($0, radix: 16) }.joined(separator: ":") }
            guard let best else { return hex(0..<8) }
            return hex(0..<best.lowerBound) + "::" + hex(best.upperBound..<8)
        }
    }

    /// The IPv4 address in the last 32 bits of an IPv6 address (the NAT64, mapped and
    /// compatible forms keep it there).
    var embeddedV4: UInt32? {
        guard case .v6(let bytes) = self, bytes.count == 16 else { return nil }
        return Self.lastFourBytes(bytes)
    }

    static func lastFourBytes(_ bytes: [UInt8]) -> UInt32 {
        bytes[12..<16].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func dottedQuad(_ value: UInt32) -> String {
        [24, 16, 8, 0].map { String((value >> UInt32($0)) & 0xFF) }.joined(separator: ".")
    }

    static func parseV4(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            let digits = part.utf8
            guard (1...3).contains(digits.count),
                  digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                  digits.count == 1 || digits.first != UInt8(ascii: "0"),  // 010 is octal to inet_aton
                  let octet = UInt32(part), octet <= 255
            else { return nil }
            value = value << 8 | octet
        }
        return value
    }

    static func parseV6(_ text: Substring) -> [UInt8]? {
        // The longest form is "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255".
        guard text.utf8.count <= 45 else { return nil }
        let groups: [UInt16]
        if let gap = text.firstRange(of: "::") {
            let tail = text[gap.upperBound...]
            guard !tail.contains("::"),
                  let head = parseGroups(text[..<gap.lowerBound], mayEndInV4: false),
                  let rest = parseGroups(tail, mayEndInV4: true),
                  head.count + rest.count <= 7  // "::" stands for at least one zero group
            else { return nil }
            groups = head + Array(repeating: 0, count: 8 - head.count - rest.count) + rest
        } else {
            guard let all = parseGroups(text, mayEndInV4: true), all.count == 8 else { return nil }
            groups = all
        }
        return groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// Colon-separated groups of 1–4 hex digits; the last may be a dotted quad (two groups).
    private static func parseGroups(_ text: Substring, mayEndInV4: Bool) -> [UInt16]? {
        guard !text.isEmpty else { return [] }
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        var groups: [UInt16] = []
        for (index, piece) in pieces.enumerated() {
            if mayEndInV4, index == pieces.count - 1, piece.contains(".") {
                guard let v4 = parseV4(piece) else { return nil }
                groups += [UInt16(v4 >> 16), UInt16(v4 & 0xFFFF)]
            } else {
                guard (1...4).contains(piece.utf8.count), piece.utf8.allSatisfy(isHexDigit),
                      let group = UInt16(piece, radix: 16)
                else { return nil }
                groups.append(group)
            }
        }
        return groups
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }
}
