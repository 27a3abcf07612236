import Crypto
import Foundation

extension OAuth1 {
    /// RFC 5849 §3.4.2: the base64 HMAC-SHA1 of `baseString` under the key
    /// `encode(consumerSecret)&encode(tokenSecret)` (the `&` is there even when the token secret
    /// is missing or empty).
    public static func hmacSHA1(baseString: String, consumerSecret: String, tokenSecret: String?) -> String {
        let mac = HMAC<Insecure.SHA1>.authenticationCode(
            for: Data(baseString.utf8), using: signingKey(consumerSecret: consumerSecret, tokenSecret: tokenSecret)
        )
        return Data(mac).base64EncodedString()
    }

    /// Signs one request with HMAC-SHA1 and returns the whole `Authorization` header value,
    /// `OAuth realm="…", oauth_consumer_key="…", …` (parameters sorted by name, values
    /// percent-encoded and quoted, separated by `, `).
    ///
    /// The signed parameters are the query of `url`, `bodyParameters` (a form body, decoded)
    /// and the protocol parameters: `oauth_consumer_key`, `oauth_nonce`,
    /// `oauth_signature_method="HMAC-SHA1"`, `oauth_timestamp`, `oauth_token` when `token` is
    /// not nil, and `oauth_version="1.0"` when `includeVersion` (optional in the RFC, whose
    /// examples leave it out; Digits and Twitter clients send it). `realm` is sent but not signed.
    public static func authorizationHeader(
        method: String, url: String, consumerKey: String, consumerSecret: String,
        token: String?, tokenSecret: String?, nonce: String, timestamp: String, includeVersion: Bool = true,
        realm: String? = nil, bodyParameters: [(String, String)] = []
    ) throws(OAuthRequestError) -> String {
        guard !consumerKey.isEmpty else { throw OAuthRequestError("the consumer key is empty") }
        guard !nonce.isEmpty else { throw OAuthRequestError("the nonce is empty") }
        guard !timestamp.isEmpty, timestamp.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            throw OAuthRequestError("the timestamp must be a positive whole number of seconds since 1970")
        }
        if let realm, !OAuthAuthorizationHeader.isValidRealm(realm) {
            throw OAuthRequestError("the realm must be printable ASCII without '\"' or '\\'")
        }
        var protocolParameters: [String: String] = [
            Parameter.consumerKey: consumerKey,
            Parameter.nonce: nonce,
            Parameter.signatureMethod: hmacSHA1Method,
            Parameter.timestamp: timestamp,
        ]
        if let token { protocolParameters[Parameter.token] = token }
        if includeVersion { protocolParameters[Parameter.version] = version }

        let baseString = try signatureBaseString(
            method: method, url: url, parameters: protocolParameters.map { ($0.key, $0.value) } + bodyParameters
        )
        protocolParameters[Parameter.signature] = hmacSHA1(
            baseString: baseString, consumerSecret: consumerSecret, tokenSecret: tokenSecret
        )
        return OAuthAuthorizationHeader(parameters: protocolParameters, realm: realm).headerValue
    }

    /// A fresh nonce: 32 random hex digits (128 bits from the system's secure generator).
    public static func randomNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }.lowercaseHex
    }

    static func signingKey(consumerSecret: String, tokenSecret: String?) -> SymmetricKey {
        SymmetricKey(data: Data((percentEncode(consumerSecret) + "&" + percentEncode(tokenSecret ?? "")).utf8))
    }
}
