import AsyncHTTPClient
import EchoRelayCore
import EchoRelayQueue
import Foundation
import NIOCore
import NIOHTTP1

/// Reads the transmitter's JWKS from its URL: `GET`, `200` only, at most 64 KiB, within 10 s
/// for the whole exchange (the body too: a host that sends its head and then stalls does not
/// hold the key refresh), no redirects followed.
public enum JWKSFetch {
    public static let maximumSize = 64 * 1024
    public static let timeout: Duration = .seconds(10)

    /// Why `url` cannot be the JWKS URL, or nil: an absolute https URL (http only when
    /// `allowHTTP`, for local testing).
    public static func problem(url: String, allowHTTP: Bool) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty else { return "must be an absolute URL" }
        guard scheme == "https" || (scheme == "http" && allowHTTP) else {
            return allowHTTP ? "must use http or https" : "must use https (plain http only with ECHORELAY_SET_ALLOW_HTTP=1)"
        }
        return nil
    }

    /// One client for the process's life, that follows no redirect: the keys come from the
    /// configured URL itself.
    public static let client = HTTPClient(eventLoopGroupProvider: .singleton,
                                          configuration: .init(redirectConfiguration: .disallow))

    /// The fetch for `TransmitterKeys`, on `client`.
    public static func from(_ url: String, within limit: Duration = timeout, client: HTTPClient = JWKSFetch.client) -> TransmitterKeys.Fetch {
        { @Sendable in
            do {
                return try await withTimeout(limit) {
                    var request = HTTPClientRequest(url: url)
                    request.headers.add(name: "Accept", value: "application/jwk-set+json, application/json")
                    // AsyncHTTPClient's deadline ends when the head arrives; the body is bounded
                    // by the timeout around both.
                    let response = try await client.execute(request, timeout: .init(limit))
                    guard response.status == .ok else { throw JWKSFetchError("the JWKS URL answered \(response.status.code)") }
                    let body = try await response.body.collect(upTo: maximumSize)
                    return Array(body.readableBytesView)
                }
            } catch is TimeoutError {
                throw JWKSFetchError("the JWKS URL did not send its whole answer within \(limit)")
            }
        }
    }
}

public struct JWKSFetchError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
