import Foundation

/// Where EchoRelay may POST webhooks: the guard against server-side request forgery.
///
/// A subscription URL comes from an app backend, and EchoRelay sends signed requests to it from
/// inside the deployment's network. Unless private subscribers are allowed
/// (`ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS=1`, which also allows `http`), a URL must use `https`
/// and must not lead to a loopback, private, link-local, unique-local, CGNAT, multicast or
/// reserved address, nor to an IPv6 form that carries an IPv4 address into such a place
/// (IPv4-mapped, IPv4-compatible, 6to4, Teredo, NAT64).
///
/// The URL is checked when the subscription is created or changed (`check(_:)`), and every
/// address its host resolves to is checked again right before each delivery (`allows(_:)`,
/// through `AddressResolver` in the workers), because a name may resolve elsewhere later
/// (DNS rebinding).
public struct SubscriberURLPolicy: Sendable {
    public static let maximumLength = 2048

    public let allowPrivate: Bool
    /// Private hosts and ranges allowed over https (`ECHORELAY_PRIVATE_SUBSCRIBERS`).
    public let allowList: PrivateSubscriberAllowList

    public init(allowPrivate: Bool, allowList: PrivateSubscriberAllowList = .none) {
        self.allowPrivate = allowPrivate
        self.allowList = allowList
    }

    /// Checks a subscription URL when it is created or changed. On success returns the
    /// normalised URL text to store (lower-case scheme and host, canonical IP literal, no
    /// default port, `/` for an empty path); on failure a reason for a 422 field error on `url`.
    public func check(_ url: String) -> Result<String, SubscriberURLProblem> {
        func fail(_ reason: String) -> Result<String, SubscriberURLProblem> { .failure(SubscriberURLProblem(reason)) }

        guard !url.isEmpty else { return fail("is required") }
        guard url.utf8.count <= Self.maximumLength else { return fail("is longer than \(Self.maximumLength) characters") }
        // URLComponents quietly accepts (and sometimes re-encodes) text that other URL parsers
        // read differently — spaces, backslashes, raw non-ASCII — so only RFC 3986 characters
        // and well-formed %XX escapes get as far as the parser.
        guard URIText.isValid(url[...], allowing: "/?#[]") else {
            return fail("must contain only URL characters (percent-encode the rest; write international host names in punycode)")
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            return fail("is not a valid absolute URL")
        }
        guard scheme == "https" || (scheme == "http" && allowPrivate) else {
            return fail(allowPrivate ? "must use http or https" : "must use https")
        }
        guard components.percentEncodedUser == nil, components.percentEncodedPassword == nil else {
            return fail("must not contain user information (user@host)")
        }
        guard components.percentEncodedFragment == nil else { return fail("must not have a fragment (#…)") }
        // `encodedHost` is the host as written (punycode stays punycode; `host` would decode it).
        guard let rawHost = components.encodedHost, !rawHost.isEmpty else { return fail("must have a host") }
        guard !rawHost.contains("%") else { return fail("must not percent-encode the host") }
        guard components.host != nil else { return fail("has an invalid international (xn--) host name") }
        if let port = components.port {
            guard (1...65535).contains(port) else { return fail("has an invalid port") }
        }

        let host: String
        switch checkHost(rawHost.lowercased()) {
        case .success(let normalised): host = normalised
        case .failure(let problem): return .failure(problem)
        }

        // Rebuild the URL from the checked parts, so what is stored is what was checked.
        var normalised = "\(scheme)://\(host)"
        if let port = components.port, port != (scheme == "https" ? 443 : 80) { normalised += ":\(port)" }
        normalised += components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery, !query.isEmpty { normalised += "?" + query }
        return .success(normalised)
    }

    /// Whether one resolved address may be connected to (delivery time).
    public func allows(_ address: IPAddress) -> Bool {
        refusal(for: address) == nil
    }

    /// Why an address may not be connected to, naming the range; `nil` when it may.
    public func refusal(for address: IPAddress) -> SubscriberURLProblem? {
        if case .v6(let bytes) = address, bytes.count != 16 { return SubscriberURLProblem("is not a valid IPv6 address") }
        guard !allowPrivate, !allowList.allows(address) else { return nil }
        return Self.refusedRange(address).map { SubscriberURLProblem("points to \($0)") }
    }

    // MARK: - Hosts

    /// Names that only mean something inside a network (or nowhere); `*.name` is refused too.
    static let localOnlyNames: [String] = [
        "localhost",    // RFC 6761
        "local",        // multicast DNS, RFC 6762
        "localdomain",
        "internal",     // reserved for private use (ICANN, 2024); cloud metadata lives here
        "intranet", "lan", "home", "corp", "private",  // customary private names, never delegated
        "arpa",         // reverse-lookup and infrastructure names, home.arpa (RFC 8375)
        "onion",        // RFC 7686
        "test", "invalid",  // RFC 6761: never on the public internet
    ]

    private func checkHost(_ host: String) -> Result<String, SubscriberURLProblem> {
        func fail(_ reason: String) -> Result<String, SubscriberURLProblem> { .failure(SubscriberURLProblem(reason)) }

        if host.hasPrefix("[") {
            guard let address = IPAddress.parse(host), case .v6 = address else { return fail("has an invalid IPv6 address") }
            if let problem = refusal(for: address) { return .failure(problem) }
            return .success("[\(address)]")
        }
        if let address = IPAddress.parse(host) {
            if let problem = refusal(for: address) { return .failure(problem) }
            return .success(address.description)
        }

        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard host.utf8.count <= 253 else { return fail("has an invalid host name (longer than 253 characters)") }
        guard labels.allSatisfy({ (1...63).contains($0.utf8.count) }) else {
            return fail("has an invalid host name (empty or over-long label)")
        }
        guard labels.allSatisfy({ $0.utf8.allSatisfy(Self.isHostNameByte) }) else {
            return fail("has an invalid host name (letters, digits, hyphens and dots only)")
        }
        guard !allowPrivate, !allowList.allows(host: host) else { return .success(host) }

        // Resolvers read 2130706433, 0x7f.1, 017700000001 and 127.1 as 127.0.0.1 (inet_aton),
        // and the WHATWG URL standard treats any host ending in a number as IPv4. Only the
        // canonical dotted quad, handled above, is an address here.
        if let last = labels.last, Self.isNumericLabel(last) {
            return fail("has a numeric host that is not a dotted-quad IPv4 address")
        }
        for name in Self.localOnlyNames where host == name || host.hasSuffix("." + name) {
            return fail(host == name ? "points to a local-only name (\(name))" : "points to a local-only name (*.\(name))")
        }
        // A single-label name resolves through the local search domains: an internal host.
        guard labels.count >= 2 else { return fail("must use a fully qualified host name") }
        return .success(host)
    }

    /// Decimal digits, or `0x` and hex digits: a part of an IPv4 address to inet_aton and WHATWG.
    static func isNumericLabel(_ label: Substring) -> Bool {
        let bytes = Array(label.utf8)
        if bytes.count >= 2, bytes[0] == UInt8(ascii: "0"), bytes[1] == UInt8(ascii: "x") {
            return bytes.dropFirst(2).allSatisfy(IPAddress.isHexDigit)
        }
        return bytes.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    static func isHostNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"): true
        default: false
        }
    }

    // MARK: - Address ranges

    /// IPv4 ranges that are not the public internet (IANA special-purpose registry), most
    /// specific first.
    static let refusedV4: [(base: UInt32, prefix: Int, kind: String)] = [
        (0x0000_0000, 8, "an unspecified (\"this network\") address"),
        (0x0A00_0000, 8, "a private address"),
        (0x6440_0000, 10, "a shared (CGNAT) address"),
        (0x7F00_0000, 8, "a loopback address"),
        (0xA9FE_0000, 16, "a link-local address"),
        (0xAC10_0000, 12, "a private address"),
        (0xC000_0000, 24, "an IETF protocol assignment address"),
        (0xC000_0200, 24, "a documentation address"),
        (0xC058_6300, 24, "a 6to4 relay anycast address"),
        (0xC0A8_0000, 16, "a private address"),
        (0xC612_0000, 15, "a benchmarking address"),
        (0xC633_6400, 24, "a documentation address"),
        (0xCB00_7100, 24, "a documentation address"),
        (0xE000_0000, 4, "a multicast address"),
        (0xFFFF_FFFF, 32, "the broadcast address"),
        (0xF000_0000, 4, "a reserved address"),
    ]

    /// IPv6 ranges that are not the public internet, or that lead to IPv4 by a route that the
    /// IPv4 checks cannot see. Most specific first; anything outside 2000::/3 (global unicast)
    /// is refused after these.
    static let refusedV6: [(base: [UInt8], prefix: Int, cidr: String, kind: String)] = [
        (v6(0, 0, 0, 0, 0, 0, 0, 0), 128, "::/128", "the unspecified address"),
        (v6(0, 0, 0, 0, 0, 0, 0, 1), 128, "::1/128", "the loopback address"),
        (v6(0, 0, 0, 0, 0, 0xFFFF, 0, 0), 96, "::ffff:0:0/96", "an IPv4-mapped address"),
        (v6(0, 0, 0, 0, 0xFFFF, 0, 0, 0), 96, "::ffff:0:0:0/96", "an IPv4-translated address"),
        (v6(0, 0, 0, 0, 0, 0, 0, 0), 96, "::/96", "an IPv4-compatible address"),
        (v6(0x64, 0xFF9B, 1, 0, 0, 0, 0, 0), 48, "64:ff9b:1::/48", "a local-use NAT64 address"),
        (v6(0x100, 0, 0, 0, 0, 0, 0, 0), 64, "100::/64", "a discard-only address"),
        (v6(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, "2001::/32", "a Teredo address"),
        (v6(0x2001, 2, 0, 0, 0, 0, 0, 0), 48, "2001:2::/48", "a benchmarking address"),
        (v6(0x2001, 0x10, 0, 0, 0, 0, 0, 0), 28, "2001:10::/28", "an ORCHID address"),
        (v6(0x2001, 0x20, 0, 0, 0, 0, 0, 0), 28, "2001:20::/28", "an ORCHIDv2 address"),
        (v6(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, "2001::/23", "an IETF protocol assignment address"),
        (v6(0x2001, 0xDB8, 0, 0, 0, 0, 0, 0), 32, "2001:db8::/32", "a documentation address"),
        (v6(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, "2002::/16", "a 6to4 address"),
        (v6(0x3FFF, 0, 0, 0, 0, 0, 0, 0), 20, "3fff::/20", "a documentation address"),
        (v6(0xFC00, 0, 0, 0, 0, 0, 0, 0), 7, "fc00::/7", "a unique-local address"),
        (v6(0xFE80, 0, 0, 0, 0, 0, 0, 0), 10, "fe80::/10", "a link-local address"),
        (v6(0xFEC0, 0, 0, 0, 0, 0, 0, 0), 10, "fec0::/10", "a site-local address"),
        (v6(0xFF00, 0, 0, 0, 0, 0, 0, 0), 8, "ff00::/8", "a multicast address"),
    ]

    static let nat64 = v6(0x64, 0xFF9B, 0, 0, 0, 0, 0, 0)
    static let globalUnicast = v6(0x2000, 0, 0, 0, 0, 0, 0, 0)

    /// The refused range holding the address, as "a private address (10.0.0.0/8)".
    static func refusedRange(_ address: IPAddress) -> String? {
        switch address {
        case .v4(let value):
            for range in refusedV4 where prefixMatches(value, range.base, range.prefix) {
                return "\(range.kind) (\(IPAddress.v4(range.base))/\(range.prefix))"
            }
            return nil
        case .v6(let bytes):
            // NAT64 (RFC 6052) reaches the IPv4 address in the last 32 bits: judge that one.
            if prefixMatches(bytes, nat64, 96) {
                guard let embedded = IPAddress.v6(bytes).embeddedV4, let inner = refusedRange(.v4(embedded)) else { return nil }
                return "a NAT64 address (64:ff9b::/96) embedding \(inner)"
            }
            for range in refusedV6 where prefixMatches(bytes, range.base, range.prefix) {
                return "\(range.kind) (\(range.cidr))"
            }
            guard prefixMatches(bytes, globalUnicast, 3) else { return "a reserved address (outside 2000::/3)" }
            return nil
        }
    }

    static func prefixMatches(_ value: UInt32, _ base: UInt32, _ prefix: Int) -> Bool {
        let mask: UInt32 = prefix == 0 ? 0 : ~0 << UInt32(32 - prefix)
        return value & mask == base & mask
    }

    static func prefixMatches(_ bytes: [UInt8], _ base: [UInt8], _ prefix: Int) -> Bool {
        guard bytes.count == 16, base.count == 16 else { return false }
        for index in 0..<16 {
            let bits = min(max(prefix - 8 * index, 0), 8)
            guard bits > 0 else { return true }
            let mask: UInt8 = ~0 << UInt8(8 - bits)
            guard bytes[index] & mask == base[index] & mask else { return false }
        }
        return true
    }

    private static func v6(_ groups: UInt16...) -> [UInt8] {
        groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}

/// Why a subscription URL or address is refused; `reason` completes a sentence about the URL
/// ("must use https", "points to a private address (10.0.0.0/8)").
public struct SubscriberURLProblem: Error, Equatable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
