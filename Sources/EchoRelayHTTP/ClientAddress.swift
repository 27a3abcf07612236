import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Who sent a request, as far as EchoRelay can tell: the connection's peer, or, when that
/// peer is one of `ECHORELAY_TRUSTED_PROXIES`, the address that proxy put in
/// `X-Forwarded-For` (the right-most one not itself a trusted proxy: a client can write any
/// entries to the left of what its proxy appends).
public struct ClientAddressRule: Sendable {
    public let trustedProxies: [AddressRange]

    public init(trustedProxies: [AddressRange] = []) {
        self.trustedProxies = trustedProxies
    }

    func address(of request: Request, peer: SocketAddress?) -> String {
        guard let text = peer?.ipAddress, let peerAddress = IPAddress.parse(text) else { return "unknown" }
        guard isTrusted(peerAddress) else { return peerAddress.description }
        let forwarded = request.headers[values: HTTPField.Name("X-Forwarded-For")!]
            .flatMap { $0.split(separator: ",") }
            .map { Self.bare(String($0)) }
        for entry in forwarded.reversed() {
            guard let address = IPAddress.parse(entry) else { return "unparsable forwarded address" }
            if !isTrusted(address) { return address.description }
        }
        return peerAddress.description
    }

    private func isTrusted(_ address: IPAddress) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// `203.0.113.7`, `[2001:db8::1]:443` and `203.0.113.7:443` as the address alone.
    private static func bare(_ entry: String) -> String {
        let text = entry.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("["), let end = text.firstIndex(of: "]") { return String(text[text.index(after: text.startIndex)..<end]) }
        if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") { return String(text[..<colon]) }
        return text
    }
}
