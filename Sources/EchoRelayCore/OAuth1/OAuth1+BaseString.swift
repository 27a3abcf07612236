extension OAuth1 {
    /// RFC 5849 §3.4.1.2: the scheme, host and path of an `http` or `https` URL, without query
    /// or fragment; scheme and host lower-cased, the scheme's default port (80, 443) left out,
    /// the path kept as written (`/` if empty).
    ///
    /// `HTTP://EXAMPLE.COM:80/r%20v/X?id=123` → `http://example.com/r%20v/X`.
    public static func baseStringURI(_ url: String) throws(OAuthRequestError) -> String {
        try RequestURL(url).baseStringURI
    }

    /// The query parameters of `url`, decoded (the first source of §3.4.1.3.1).
    public static func queryParameters(of url: String) throws(OAuthRequestError) -> [(String, String)] {
        try RequestURL(url).queryParameters()
    }

    /// RFC 5849 §3.4.1.3.2: names and values percent-encoded (§3.6), sorted by name then value
    /// (byte order), joined as `name=value` pairs with `&`.
    public static func normalizedParameters(_ parameters: [(String, String)]) -> String {
        parameters
            .map { (percentEncode($0.0), percentEncode($0.1)) }
            .sorted { left, right in
                left.0 == right.0
                    ? left.1.utf8.lexicographicallyPrecedes(right.1.utf8)
                    : left.0.utf8.lexicographicallyPrecedes(right.0.utf8)
            }
            .map { $0.0 + "=" + $0.1 }
            .joined(separator: "&")
    }

    /// RFC 5849 §3.4.1.1: `METHOD&encoded base string URI&encoded normalized parameters`.
    ///
    /// - Parameters:
    ///   - method: the HTTP method; upper-cased here.
    ///   - url: the full request URL. **Its query parameters are collected here**, so
    ///     `parameters` must not repeat them.
    ///   - parameters: every other signed parameter, decoded: the protocol parameters of the
    ///     `Authorization` header (realm left out, as ``OAuthAuthorizationHeader/parameters``
    ///     already does) and those of an `application/x-www-form-urlencoded` body.
    ///     `oauth_signature` is dropped from every source (§3.4.1.3.1).
    public static func signatureBaseString(
        method: String, url: String, parameters: [(String, String)]
    ) throws(OAuthRequestError) -> String {
        let method = method.uppercased()
        guard !method.isEmpty else { throw OAuthRequestError("the HTTP method is empty") }
        let request = try RequestURL(url)
        let collected = (try request.queryParameters() + parameters).filter { $0.0 != Parameter.signature }
        return [method, request.baseStringURI, normalizedParameters(collected)].map(percentEncode).joined(separator: "&")
    }

    /// `url` with `parameters` appended to its query, percent-encoded (§3.6) — how the
    /// signed extra parameters of an OAuth Echo request reach the provider.
    public static func appendingQueryParameters(_ parameters: [(String, String)], to url: String) -> String {
        guard !parameters.isEmpty else { return url }
        let fragmentStart = url.firstIndex(of: "#") ?? url.endIndex
        let beforeFragment = url[..<fragmentStart]
        let separator = !beforeFragment.contains("?") ? "?" : (beforeFragment.hasSuffix("?") || beforeFragment.hasSuffix("&") ? "" : "&")
        return beforeFragment + separator + formEncode(parameters) + url[fragmentStart...]
    }
}

/// An absolute `http`/`https` URL split into the parts that OAuth signs.
///
/// A hand-written reading of RFC 3986 rather than Foundation's URL types, so that the parts
/// are exactly the bytes written (the path is not re-encoded, the host not IDNA-mapped) on
/// every platform. Anything that is not a plain absolute URL — user info, a character that
/// must be percent-encoded, a malformed escape or port — is refused.
struct RequestURL {
    let scheme: String
    let host: String
    let port: Int?
    let path: Substring
    let query: Substring?

    init(_ url: String) throws(OAuthRequestError) {
        guard let separator = url.firstRange(of: "://") else {
            throw OAuthRequestError("the URL must be absolute, starting with http:// or https://")
        }
        let scheme = url[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw OAuthRequestError("the URL's scheme must be http or https")
        }
        var rest = url[separator.upperBound...]
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = rest[authorityEnd...]
        var query: Substring?
        if let questionMark = path.firstIndex(of: "?") {
            query = path[path.index(after: questionMark)...]
            path = path[..<questionMark]
        }
        guard !authority.contains("@") else { throw OAuthRequestError("the URL must not contain user info (user@host)") }

        let hostText: Substring
        let portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw OAuthRequestError("the URL's IPv6 host has no closing ]") }
            hostText = authority[...close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw OAuthRequestError("the URL's host is malformed") }
            portText = after.isEmpty ? nil : after.dropFirst()
            let address = hostText.dropFirst().dropLast()
            guard !address.isEmpty, address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw OAuthRequestError("the URL's IPv6 host is malformed")
            }
        } else {
            let colon = authority.firstIndex(of: ":")
            hostText = authority[..<(colon ?? authority.endIndex)]
            portText = colon.map { authority[authority.index(after: $0)...] }
            guard hostText.utf8.allSatisfy(OAuth1.isUnreserved) else {
                throw OAuthRequestError("the URL's host may contain only letters, digits, '-', '.', '_' and '~'")
            }
        }
        guard !hostText.isEmpty else { throw OAuthRequestError("the URL has no host") }

        var port: Int?
        if let portText, !portText.isEmpty {
            guard portText.utf8.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let number = Int(portText), (1...65_535).contains(number)
            else { throw OAuthRequestError("the URL's port must be a number from 1 to 65535") }
            port = number
        }
        guard URIText.isValid(path, allowing: "/") else {
            throw OAuthRequestError("the URL's path has a character that must be percent-encoded, or a malformed escape")
        }
        if let query, !URIText.isValid(query, allowing: "/?") {
            throw OAuthRequestError("the URL's query has a character that must be percent-encoded, or a malformed escape")
        }

        self.scheme = scheme
        self.host = hostText.lowercased()
        self.port = port
        self.path = path
        self.query = query
    }

    var defaultPort: Int { scheme == "https" ? 443 : 80 }

    var baseStringURI: String {
        var uri = scheme + "://" + host
        if let port, port != defaultPort { uri += ":\(port)" }
        return uri + (path.isEmpty ? "/" : path)
    }

    func queryParameters() throws(OAuthRequestError) -> [(String, String)] {
        guard let query else { return [] }
        do {
            return try OAuth1.formParameters(String(query))
        } catch {
            throw OAuthRequestError("the URL's query: " + error.reason)
        }
    }
}
