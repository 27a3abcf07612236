/// Private hosts and address ranges that may receive deliveries over https
/// (`ECHORELAY_PRIVATE_SUBSCRIBERS`), such as an internal service network, while every other
/// private, loopback or local-only address stays refused. A listed host may resolve to any
/// address (its name is trusted); a listed range admits any address in it, and any public
/// name that resolves into it.
public struct PrivateSubscriberAllowList: Sendable, Equatable {
    /// Lower-case host names, matched exactly (no wildcards).
    public private(set) var hosts: Set<String> = []
    public private(set) var ranges: [AddressRange] = []

    public static let none = PrivateSubscriberAllowList()

    public var isEmpty: Bool { hosts.isEmpty && ranges.isEmpty }

    public init() {}

    /// Reads a comma-separated list of host names, IP addresses and CIDR ranges
    /// (`hooks.internal, 10.20.0.0/16, fd00:1::/64`). Throws the first bad entry's reason.
    public init(parsing text: String) throws(AllowListError) {
        for raw in text.split(separator: ",", omittingEmptySubsequences: false) {
            let entry = raw.trimmingSpaces().lowercased()
            guard !entry.isEmpty else { throw AllowListError("has an empty entry (two commas, or one at an end)") }
            if entry.contains("/") || IPAddress.parse(entry) != nil {
                ranges.append(try AddressRange(entry))
            } else {
                try Self.checkHostName(entry)
                hosts.insert(entry)
            }
        }
    }

    public func allows(host: String) -> Bool {
        hosts.contains(host.lowercased())
    }

    public func allows(_ address: IPAddress) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    static func checkHostName(_ name: String) throws(AllowListError) {
        guard !name.contains("*") else {
            throw AllowListError("\"\(name)\": wildcards are not supported; list each host, or the address range its hosts are in")
        }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard name.utf8.count <= 253, labels.allSatisfy({ (1...63).contains($0.utf8.count) }),
              labels.allSatisfy({ $0.utf8.allSatisfy(SubscriberURLPolicy.isHostNameByte) }) else {
            throw AllowListError("\"\(name)\" is neither a host name, an IP address nor a CIDR range such as 10.20.0.0/16")
        }
    }
}

/// An address range in CIDR notation, such as `10.20.0.0/16` or `fd00:1::/64`.
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    public let base: IPAddress
    public let prefix: Int

    /// Reads `address/prefix`, or a lone address (a range of one). The bits past the prefix must
    /// be zero, so that what is written is what is allowed; `/0` is refused.
    public init(_ text: String) throws(AllowListError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress.parse(String(parts[0])) else {
            throw AllowListError("\"\(text)\" is not a CIDR range: \"\(parts[0])\" is not an IP address")
        }
        let width = if case .v4 = address { 32 } else { 128 }
        let prefix: Int
        if parts.count == 2 {
            guard let number = Int(parts[1]), (0...width).contains(number), parts[1].allSatisfy(\.isASCII) else {
                throw AllowListError("\"\(text)\" is not a CIDR range: the prefix must be a whole number from 1 to \(width)")
            }
            prefix = number
        } else {
            prefix = width
        }
        guard prefix > 0 else {
            throw AllowListError("\"\(text)\" would allow every address; for local testing set ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS=1 instead")
        }
        let range = AddressRange(base: address, prefix: prefix)
        guard range.contains(address), range.isNetworkAddress else {
            throw AllowListError("\"\(text)\" has bits set past its /\(prefix) prefix; write the network's first address")
        }
        self = range
    }

    private init(base: IPAddress, prefix: Int) {
        self.base = base
        self.prefix = prefix
    }

    public func contains(_ address: IPAddress) -> Bool {
        switch (base, address) {
        case (.v4(let base), .v4(let value)): SubscriberURLPolicy.prefixMatches(value, base, prefix)
        case (.v6(let base), .v6(let bytes)): SubscriberURLPolicy.prefixMatches(bytes, base, prefix)
        default: false
        }
    }

    /// Whether every bit past the prefix is zero.
    var isNetworkAddress: Bool {
        switch base {
        case .v4(let value):
            let mask: UInt32 = ~0 << UInt32(32 - prefix)
            return value & ~mask == 0
        case .v6(let bytes):
            return bytes.indices.allSatisfy { index in
                let kept = min(max(prefix - 8 * index, 0), 8)
                let mask = kept == 8 ? UInt8(0xFF) : ~(UInt8(0xFF) >> UInt8(kept))
                return bytes[index] & ~mask == 0
            }
        }
    }

    public var description: String { "\(base)/\(prefix)" }
}

/// Why `ECHORELAY_PRIVATE_SUBSCRIBERS` cannot be read.
public struct AllowListError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

extension Substring {
    func trimmingSpaces() -> Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
