import EchoRelayCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Resolves a subscriber's host right before a delivery and checks every address it resolves
/// to, so that a name which pointed to the internet when the subscription was created cannot
/// point inside the network now (DNS rebinding).
///
/// Refusal reasons never contain the word "resolve" and failures to resolve always do: the
/// delivery worker tells the two apart by it.
public enum AddressResolver {
    /// How long a look-up may take before the delivery counts it as a DNS failure.
    public static let defaultTimeout: Duration = .seconds(10)

    /// Resolves host (or parses it if it is an IP literal) on `lookUps`' threads and checks
    /// every address with the policy. Fails if the name does not resolve, or if any address is
    /// refused: an attacker's DNS server may mix a public address with a private one.
    public static func check(
        host: String, policy: SubscriberURLPolicy, timeout: Duration = defaultTimeout, lookUps: NameLookups = .system
    ) async -> Result<[IPAddress], SubscriberURLProblem> {
        if let literal = IPAddress.parse(host) {
            if let problem = policy.refusal(for: literal) { return .failure(problem) }
            return .success([literal])
        }
        // `URLComponents.host` decodes punycode; the resolver needs the ASCII form back.
        var name = host
        if !host.utf8.allSatisfy({ $0 < 0x80 }) {
            var components = URLComponents()
            components.host = host
            name = components.encodedHost ?? host
        }
        guard isResolvableName(name) else { return .failure(SubscriberURLProblem("has an invalid host name")) }

        switch await lookUps.lookUp(name, timeout: timeout) {
        case .addresses(let addresses):
            guard !addresses.isEmpty else { return .failure(SubscriberURLProblem("does not resolve")) }
            // A host on ECHORELAY_PRIVATE_SUBSCRIBERS is trusted wherever it points.
            if policy.allowList.allows(host: host) { return .success(addresses) }
            for address in addresses {
                if let problem = policy.refusal(for: address) { return .failure(problem) }
            }
            return .success(addresses)
        case .failed(let message):
            return .failure(SubscriberURLProblem("does not resolve (\(message))"))
        case .timedOut:
            return .failure(SubscriberURLProblem("does not resolve (no DNS answer within \(timeout))"))
        case .cancelled:
            return .failure(SubscriberURLProblem("does not resolve (the look-up was cancelled)"))
        }
    }

    /// A DNS name: letters, digits, `-`, `_` and dots, at most 253 characters plus a final dot.
    /// Anything else (a NUL, a `%` zone id, spaces) never reaches getaddrinfo.
    static func isResolvableName(_ host: String) -> Bool {
        let bytes = Array(host.utf8)
        guard !bytes.isEmpty, bytes.count <= 254, bytes.first != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."): true
            default: false
            }
        }
    }

    /// What a look-up of a name came to (`NameLookups`).
    public enum LookUp: Sendable, Equatable {
        case addresses([IPAddress])
        case failed(String)
        case timedOut
        case cancelled
    }

    /// Every IPv4 and IPv6 address of a name, in the resolver's order without repeats.
    public static func blockingLookUp(_ name: String) -> LookUp {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc) || canImport(Musl)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_protocol = Int32(IPPROTO_TCP)

        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(name, nil, &hints, &list)
        guard status == 0 else {
            if status == EAI_NONAME { return .addresses([]) }
            return .failed(gai_strerror(status).map { String(cString: $0) } ?? "getaddrinfo error \(status)")
        }
        defer { freeaddrinfo(list) }

        var addresses: [IPAddress] = []
        var cursor = list
        while let entry = cursor?.pointee {
            cursor = entry.ai_next
            guard let socketAddress = entry.ai_addr else { continue }
            let address: IPAddress
            switch entry.ai_family {
            case AF_INET where Int(entry.ai_addrlen) >= MemoryLayout<sockaddr_in>.size:
                let raw = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                address = .v4(UInt32(bigEndian: raw))
            case AF_INET6 where Int(entry.ai_addrlen) >= MemoryLayout<sockaddr_in6>.size:
                var raw = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                address = .v6(withUnsafeBytes(of: &raw) { Array($0) })
            default:
                continue
            }
            if !addresses.contains(address) { addresses.append(address) }
        }
        return .addresses(addresses)
    }
}
