/// OAuth 1.0a request signing (RFC 5849) with HMAC-SHA1, the way Digits and Twitter clients
/// sign OAuth Echo headers.
///
/// The steps follow the RFC's sections, one function each, so that a test can hold every step
/// against the RFC's own examples:
///
/// - ``percentEncode(_:)`` — §3.6
/// - ``formParameters(_:)`` — the `application/x-www-form-urlencoded` decoding of a query or body (§3.4.1.3.1)
/// - ``baseStringURI(_:)`` — §3.4.1.2
/// - ``normalizedParameters(_:)`` — §3.4.1.3.2
/// - ``signatureBaseString(method:url:parameters:)`` — §3.4.1.1
/// - ``hmacSHA1(baseString:consumerSecret:tokenSecret:)`` — §3.4.2
/// - ``authorizationHeader(method:url:consumerKey:consumerSecret:token:tokenSecret:nonce:timestamp:includeVersion:realm:bodyParameters:)``
///   — §3.1 and §3.5.1, all of the above at once
///
/// Parsing a received header is ``OAuthAuthorizationHeader/parse(_:)``.
public enum OAuth1 {
    /// The only signature method EchoRelay signs with.
    public static let hmacSHA1Method = "HMAC-SHA1"
    /// The value of `oauth_version` when present (§3.1: OPTIONAL, and if present MUST be "1.0").
    public static let version = "1.0"

    /// Protocol parameter names (§3.1).
    public enum Parameter {
        public static let consumerKey = "oauth_consumer_key"
        public static let token = "oauth_token"
        public static let signatureMethod = "oauth_signature_method"
        public static let signature = "oauth_signature"
        public static let timestamp = "oauth_timestamp"
        public static let nonce = "oauth_nonce"
        public static let version = "oauth_version"
    }
}
