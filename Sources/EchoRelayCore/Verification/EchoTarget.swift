import Crypto
import Foundation

/// The checks made before any request leaves EchoRelay: a failure rejects the event and
/// nothing is sent anywhere. What passes is a request built only from checked parts.
public struct EchoPolicy: Sendable {
    /// Allowed `host` (the scheme's default port) or `host:port` entries, lower-cased.
    public let allowedHosts: Set<String>
    public let allowHTTP: Bool
    public let consumerKey: String

    public init(allowedHosts: [String], allowHTTP: Bool, consumerKey: String) {
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
        self.allowHTTP = allowHTTP
        self.consumerKey = consumerKey
    }

    /// The request to send, or the reason to reject the event.
    public func target(for echo: EchoCredentials) -> Result<EchoTarget, VerificationReason> {
        // URLComponents follows RFC 3986; anything it will not parse is refused.
        guard let components = URLComponents(string: echo.serviceProvider),
              let scheme = components.scheme?.lowercased(),
              let encodedHost = components.percentEncodedHost, !encodedHost.isEmpty,
              components.user == nil, components.password == nil,
              !encodedHost.contains("%"), components.fragment == nil
        else { return .failure(.invalidURL) }
        guard scheme == "https" || (scheme == "http" && allowHTTP) else { return .failure(.schemeNotAllowed) }

        let host = encodedHost.lowercased()
        let defaultPort = scheme == "https" ? 443 : 80
        let port = components.port ?? defaultPort
        let allowed = allowedHosts.contains("\(host):\(port)") || (port == defaultPort && allowedHosts.contains(host))
        guard allowed else { return .failure(.hostNotAllowed) }

        let header: OAuthAuthorizationHeader
        do {
            header = try OAuthAuthorizationHeader.parse(echo.authorization.revealed)
        } catch {
            return .failure(.invalidAuthorization)
        }
        guard let key = header.consumerKey,
              Array(key.utf8).count == Array(consumerKey.utf8).count, key == consumerKey
        else { return .failure(.consumerKeyMismatch) }
        guard header.signatureMethod == "HMAC-SHA1" else { return .failure(.unsupportedSignatureMethod) }

        // Rebuild the URL from the checked parts, so the request goes where the check looked.
        var url = "\(scheme)://\(host)"
        if components.port != nil { url += ":\(port)" }
        url += components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { url += "?" + query }
        let tokenHash = header.token.map { Array(SHA256.hash(data: Data($0.utf8))) }
        return .success(EchoTarget(url: url, authorization: echo.authorization, tokenHash: tokenHash))
    }
}

/// A checked OAuth Echo request.
public struct EchoTarget: Sendable, Equatable {
    public let url: String
    public let authorization: Secret
    /// SHA-256 of `oauth_token`, the only form in which EchoRelay keeps a token.
    public let tokenHash: [UInt8]?

    public init(url: String, authorization: Secret, tokenHash: [UInt8]?) {
        self.url = url
        self.authorization = authorization
        self.tokenHash = tokenHash
    }
}
