extension OAuthAuthorizationHeader {
    /// Parses an `Authorization` header value of the `OAuth` scheme (RFC 5849 §3.5.1, with the
    /// `auth-param` syntax of RFC 7235):
    ///
    ///     OAuth realm="Photos", oauth_consumer_key="dpf43f3p2l4k3l03", oauth_signature="MdpQ…%3D"
    ///
    /// - The scheme is `OAuth` in any case, followed by a space.
    /// - Each parameter is `name="value"`, separated by commas with optional spaces or tabs
    ///   (empty list elements are allowed, as RFC 7230 §7 asks).
    /// - Names and values are percent-decoded (§3.6); `realm` (by its decoded name, in any case)
    ///   is kept as written and left out of ``parameters``.
    ///
    /// Refused, with a reason that names at most the parameter: an empty header, another
    /// scheme, a repeated parameter, an unquoted value, a missing closing quote, a backslash
    /// (OAuth values are percent-encoded, never escaped), a malformed percent escape, bytes
    /// that are not UTF-8 once decoded, text between parameters, a tab inside the realm (which
    /// is printable ASCII, as ``realm`` promises), and any control character or
    /// non-ASCII byte — so a header that parses can be sent on as an HTTP header unchanged.
    public static func parse(_ header: String) throws(OAuthHeaderError) -> OAuthAuthorizationHeader {
        var parser = Parser(bytes: Array(header.utf8))
        return try parser.parse()
    }
}

/// A single pass over the header's bytes.
///
/// Error texts are built from fixed words, parameter positions and parameter names — a name
/// only once it has been read up to its `=`, so that stray text (which might be a credential
/// pasted in the wrong place) is never repeated.
private struct Parser {
    let bytes: [UInt8]
    var index = 0

    mutating func parse() throws(OAuthHeaderError) -> OAuthAuthorizationHeader {
        skipWhitespace()
        guard index < bytes.count else { throw OAuthHeaderError("the Authorization header is empty") }
        for byte in bytes {
            if byte >= 0x80 {
                throw OAuthHeaderError("the Authorization header has a non-ASCII byte; OAuth values are percent-encoded")
            }
            if (byte < 0x20 && byte != Self.tab) || byte == 0x7F {
                throw OAuthHeaderError("the Authorization header has a control character; only spaces and tabs may separate parameters")
            }
        }

        let scheme = readToken()
        guard String(decoding: scheme, as: UTF8.self).lowercased() == "oauth" else {
            throw OAuthHeaderError("the Authorization header must use the OAuth scheme")
        }
        guard index < bytes.count else { throw OAuthHeaderError("the OAuth header has no parameters") }
        guard isWhitespace(bytes[index]) else {
            throw OAuthHeaderError("the OAuth scheme must be followed by a space, then name=\"value\" parameters")
        }

        var parameters: [String: String] = [:]
        var realm: String?
        var position = 0
        while true {
            // Separators: optional whitespace and commas, including empty list elements.
            skipWhitespaceAndCommas()
            guard index < bytes.count else { break }
            position += 1
            try readParameter(position: position, into: &parameters, realm: &realm)
            skipWhitespace()
            guard index < bytes.count else { break }
            guard bytes[index] == UInt8(ascii: ",") else {
                throw OAuthHeaderError("parameter \(position) is followed by text that is not a comma and the next parameter")
            }
        }
        guard !parameters.isEmpty || realm != nil else { throw OAuthHeaderError("the OAuth header has no parameters") }
        return OAuthAuthorizationHeader(parameters: parameters, realm: realm)
    }

    /// `name BWS "=" BWS quoted-string`, then records it.
    mutating func readParameter(
        position: Int, into parameters: inout [String: String], realm: inout String?
    ) throws(OAuthHeaderError) {
        let rawName = readToken()
        skipWhitespace()
        guard !rawName.isEmpty, index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
            throw OAuthHeaderError("parameter \(position) is not of the form name=\"value\"")
        }
        index += 1
        let label = Self.label(rawName)
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
            throw OAuthHeaderError("the value of \(label) is not quoted; OAuth values are written name=\"value\"")
        }
        index += 1
        let valueStart = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            if bytes[index] == UInt8(ascii: "\\") {
                throw OAuthHeaderError("the value of \(label) has a backslash; OAuth values are percent-encoded, never escaped")
            }
            index += 1
        }
        guard index < bytes.count else { throw OAuthHeaderError("the value of \(label) has no closing quote") }
        let rawValue = bytes[valueStart..<index]
        index += 1

        let name: String
        do throws(OAuth1.PercentDecodingFailure) {
            name = try OAuth1.percentDecode(rawName, plusIsSpace: false)
        } catch {
            throw OAuthHeaderError("the name of parameter \(position) \(error.explanation)")
        }
        // Known by its decoded name, so that no spelling of it (`re%61lm`) lands among the parameters.
        if name.lowercased() == "realm" {
            guard realm == nil else { throw OAuthHeaderError("realm appears more than once") }
            let text = String(decoding: rawValue, as: UTF8.self)
            // Quotes, backslashes, controls and non-ASCII bytes are refused above; a tab is what is left.
            guard OAuthAuthorizationHeader.isValidRealm(text) else {
                throw OAuthHeaderError("the realm has a tab; a realm is printable ASCII")
            }
            realm = text
            return
        }
        let value: String
        do throws(OAuth1.PercentDecodingFailure) {
            value = try OAuth1.percentDecode(rawValue, plusIsSpace: false)
        } catch {
            throw OAuthHeaderError("the value of \(label) \(error.explanation)")
        }
        guard parameters[name] == nil else { throw OAuthHeaderError("\(label) appears more than once") }
        parameters[name] = value
    }

    /// RFC 7230 `token`: `tchar` bytes (which include `%`, so percent-encoded names read whole).
    mutating func readToken() -> ArraySlice<UInt8> {
        let start = index
        while index < bytes.count, Self.isTokenCharacter(bytes[index]) { index += 1 }
        return bytes[start..<index]
    }

    mutating func skipWhitespace() {
        while index < bytes.count, isWhitespace(bytes[index]) { index += 1 }
    }

    mutating func skipWhitespaceAndCommas() {
        while index < bytes.count, isWhitespace(bytes[index]) || bytes[index] == UInt8(ascii: ",") { index += 1 }
    }

    func isWhitespace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == Self.tab }

    static let tab: UInt8 = 0x09

    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        OAuth1.isUnreserved(byte) || "!#$%&'*+^`|".utf8.contains(byte)
    }

    /// A parameter name for an error text: as written (token characters only), quoted, cut short.
    static func label(_ rawName: ArraySlice<UInt8>) -> String {
        let name = String(decoding: rawName.prefix(64), as: UTF8.self)
        return "\"" + name + (rawName.count > 64 ? "…" : "") + "\""
    }
}
