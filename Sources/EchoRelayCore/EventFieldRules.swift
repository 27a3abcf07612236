import Foundation

/// The rules for each field of an event, one function each, so the tests and the
/// documentation can point at them. Each rule answers the reason a value fails, or nil.
///
/// Several rules are stated over Unicode scalars; where every byte of a value is ASCII they
/// are decided from the bytes, which gives the same answer without looking up scalar
/// properties (the common case, and most of what parsing an event used to cost).
public enum EventFieldRules {
    public static let typeReason =
        "must be one of " + EventType.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")

    /// `id`: 1–128 characters of `[A-Za-z0-9._:-]`.
    public static func eventIDProblem(_ id: String) -> String? {
        guard (1...128).contains(id.utf8.count) else { return "must be 1 to 128 characters long" }
        let allowed = id.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-")
        }
        return allowed ? nil : "may contain only letters, digits and . _ : -"
    }

    /// `user_id`: 1–64 printable characters (Unicode scalars), none of them white space.
    public static func userIDProblem(_ userID: String) -> String? {
        // Printable ASCII (0x21–0x7E) is letters, digits and punctuation: one scalar per byte,
        // none white space or unprintable.
        var text = userID
        let isPrintableASCII = text.withUTF8 { bytes in
            (1...64).contains(bytes.count) && bytes.allSatisfy { $0 >= 0x21 && $0 <= 0x7E }
        }
        if isPrintableASCII { return nil }

        let scalars = userID.unicodeScalars
        guard (1...64).contains(scalars.count) else { return "must be 1 to 64 characters long" }
        for scalar in scalars {
            if scalar.properties.isWhitespace { return "must not contain white space" }
            switch scalar.properties.generalCategory {
            case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator,
                 .paragraphSeparator, .spaceSeparator:
                return "must contain only printable characters"
            default:
                continue
            }
        }
        return nil
    }

    /// `data.phone_number`: E.164, a `+` and 2 to 15 digits, the first not 0.
    public static func phoneNumberProblem(_ phone: String) -> String? {
        let bytes = phone.utf8
        guard bytes.count >= 3, bytes.count <= 16, bytes.first == UInt8(ascii: "+"),
              let first = bytes.dropFirst().first, first >= UInt8(ascii: "1"), first <= UInt8(ascii: "9"),
              bytes.dropFirst().allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return "must be an E.164 phone number such as +15555550100" }
        return nil
    }

    static let authorizationPrefixReason = "must be an OAuth 1.0a header starting with \"OAuth \""
    static let controlCharacterReason = "must not contain control characters"

    /// `echo.authorization`: an OAuth 1.0a header, one line of printable text. Its fine
    /// structure is checked at verification, where a bad header rejects the event.
    public static func authorizationProblem(_ header: String) -> String? {
        // In pure ASCII, "OAuth " is a prefix of the bytes exactly when it is one of the
        // characters, and the control characters (category Cc) are the bytes below 0x20 and 0x7F.
        var text = header
        let answer = text.withUTF8 { bytes -> ASCIIAnswer in
            var hasControl = false
            for byte in bytes {
                if byte >= 0x80 { return .notASCII }
                if byte < 0x20 || byte == 0x7F { hasControl = true }
            }
            guard bytes.starts(with: "OAuth ".utf8) else { return .problem(authorizationPrefixReason) }
            return .problem(hasControl ? controlCharacterReason : nil)
        }
        if case .problem(let reason) = answer { return reason }

        guard header.hasPrefix("OAuth ") else { return authorizationPrefixReason }
        guard !header.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return controlCharacterReason
        }
        return nil
    }

    /// `echo` and `oauth2` together: an event is confirmed one way only.
    public static let bothProofsReason = "must not be sent with echo: an event carries exactly one of echo and oauth2"

    public static let maximumAccessTokenLength = 4096

    /// `oauth2.access_token`: an RFC 6750 `b64token` (it is sent as `Authorization: Bearer`),
    /// 1 to 4096 characters: letters, digits and `- . _ ~ + /`, then any `=` padding.
    public static func accessTokenProblem(_ token: String) -> String? {
        let bytes = token.utf8
        guard (1...maximumAccessTokenLength).contains(bytes.count) else {
            return "must be 1 to \(maximumAccessTokenLength) characters long"
        }
        func isTokenCharacter(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                true
            default:
                false
            }
        }
        let body = bytes.prefix { isTokenCharacter($0) }
        let padding = bytes.dropFirst(body.count)
        guard !body.isEmpty, padding.allSatisfy({ $0 == UInt8(ascii: "=") }) else {
            return "must be an OAuth 2 bearer token: letters, digits and - . _ ~ + /, then any = padding"
        }
        return nil
    }

    /// A rule's answer from the bytes alone, or word that the value is not ASCII.
    private enum ASCIIAnswer {
        case problem(String?)
        case notASCII
    }

    /// `echo.service_provider`: an absolute URL (scheme and host). Whether its scheme and
    /// host are acceptable is decided at verification, where a refusal rejects the event.
    public static func serviceProviderProblem(_ url: String) -> String? {
        if ServiceProviderURL.isCertainlyAbsolute(url) { return nil }

        if url.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return controlCharacterReason
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme, !scheme.isEmpty,
              let host = components.host, !host.isEmpty
        else { return "must be an absolute URL such as https://api.example.com/1.1/account/verify_credentials.json" }
        return nil
    }
}
