import EchoRelayCore
import Foundation

/// The service provider's half of OAuth 1.0a, which EchoRelay itself never runs (it hands the
/// signed header to the provider, which checks it): the tests' check that what EchoRelay's
/// signing code writes verifies as RFC 5849 says.
extension OAuth1 {
    /// Whether `signature` (base64, as in `oauth_signature` once percent-decoded) is the
    /// HMAC-SHA1 of `baseString` under these secrets.
    public static func isValidSignature(
        _ signature: String, baseString: String, consumerSecret: String, tokenSecret: String?
    ) -> Bool {
        guard let mac = Data(base64Encoded: signature) else { return false }
        return mac == Data(base64Encoded: hmacSHA1(baseString: baseString, consumerSecret: consumerSecret, tokenSecret: tokenSecret))
    }

    /// What a service provider checks (§3.2, the signature part): that `header` carries an
    /// HMAC-SHA1 signature of this request under these secrets. The signed parameters are the
    /// query of `url`, the header's parameters and `bodyParameters` (a form body, decoded).
    /// False when the header has no signature or another signature method.
    public static func isValidSignature(
        of header: OAuthAuthorizationHeader, method: String, url: String,
        consumerSecret: String, tokenSecret: String?, bodyParameters: [(String, String)] = []
    ) throws(OAuthRequestError) -> Bool {
        guard header.signatureMethod == hmacSHA1Method, let signature = header.signature else { return false }
        let parameters = header.parameters.map { ($0.key, $0.value) } + bodyParameters
        let baseString = try signatureBaseString(method: method, url: url, parameters: parameters)
        return isValidSignature(signature, baseString: baseString, consumerSecret: consumerSecret, tokenSecret: tokenSecret)
    }
}
