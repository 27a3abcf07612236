/// The parameters of an `Authorization: OAuth …` header (RFC 5849 §3.5.1), decoded.
///
/// Its descriptions list parameter names only: the values are credentials (the token, the
/// signature) and must not reach a log line by accident. Read them through the properties.
public struct OAuthAuthorizationHeader: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Every parameter but `realm`, percent-decoded: `oauth_*` ones and any other.
    public var parameters: [String: String]
    /// The `realm` (RFC 2617), as written between its quotes: it is not signed, and ignored
    /// by OAuth. It must be printable ASCII without `"` or `\`.
    public var realm: String?

    public init(parameters: [String: String], realm: String? = nil) {
        self.parameters = parameters
        self.realm = realm
    }

    public var consumerKey: String? { parameters[OAuth1.Parameter.consumerKey] }
    public var token: String? { parameters[OAuth1.Parameter.token] }
    public var signatureMethod: String? { parameters[OAuth1.Parameter.signatureMethod] }
    public var signature: String? { parameters[OAuth1.Parameter.signature] }
    public var timestamp: String? { parameters[OAuth1.Parameter.timestamp] }
    public var nonce: String? { parameters[OAuth1.Parameter.nonce] }
    public var version: String? { parameters[OAuth1.Parameter.version] }

    /// The header value: `OAuth realm="…", name="value", …` — realm first, then the parameters
    /// sorted by name, names and values percent-encoded (§3.6), separated by `, `.
    public var headerValue: String {
        var parts: [String] = []
        if let realm { parts.append("realm=\"\(realm)\"") }
        parts += parameters
            .map { (OAuth1.percentEncode($0.key), OAuth1.percentEncode($0.value)) }
            .sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            .map { "\($0.0)=\"\($0.1)\"" }
        return "OAuth " + parts.joined(separator: ", ")
    }

    public var description: String {
        let names = parameters.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return "OAuthAuthorizationHeader(\(realm == nil ? "" : "realm, ")parameters: \(names.joined(separator: ", ")); values redacted)"
    }

    public var debugDescription: String { description }

    static func isValidRealm(_ realm: String) -> Bool {
        realm.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }
}
