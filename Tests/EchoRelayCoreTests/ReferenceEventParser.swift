import Crypto
import EchoRelayCore
import Foundation

/// The ingest parser as it was before the one-pass reader replaced it (commit adef0c6),
/// copied here unchanged but for names, so the differential tests can hold the new parser
/// to exactly its answers: `JSONValue.parse` (JSONDecoder), field checks with the Unicode
/// rules, and SHA-256 of `JSONValue.canonicalEncoding()` (JSONEncoder) as the fingerprint.
/// Not to be "fixed": it is the reference, quirks and all. The one addition since is the
/// `oauth2` proof (issue 48's contract), written here again from that contract.
enum ReferenceEventParser {
    static func parse(body: [UInt8]) throws(EventParseError) -> IncomingEvent {
        guard String(validating: body, as: UTF8.self) != nil else {
            throw .malformed("the body is not valid UTF-8")
        }
        let document: JSONValue
        do {
            document = try JSONValue.parse(body)
        } catch let tooDeep as JSONValue.TooDeep {
            throw .malformed("the body is not accepted: \(tooDeep)")
        } catch {
            throw .malformed("the body is not valid JSON")
        }
        guard let object = document.objectValue else {
            throw .malformed("the body must be a JSON object, not \(document.typeName)")
        }

        var fields = ReferenceFieldReader(object: object, path: "")
        let id = fields.string("id") { ReferenceFieldRules.eventIDProblem($0) }
        let type = fields.string("type") { EventType(rawValue: $0) == nil ? ReferenceFieldRules.typeReason : nil }
            .flatMap(EventType.init(rawValue:))
        let userID = fields.string("user_id") { ReferenceFieldRules.userIDProblem($0) }
        let occurredText = fields.string("occurred_at") { text in
            guard let date = RFC3339.parse(text) else { return "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z" }
            return TextRules.isInStoredRange(date) ? nil : TextRules.timeRangeReason
        }

        var phoneNumber: String?
        switch object["data"] {
        case nil, .null?:
            if type == .phoneChanged { fields.problems.append(.init(field: "data", reason: "is required for phone.changed")) }
        case .object(let data)?:
            var dataFields = ReferenceFieldReader(object: data, path: "data.")
            if type == .phoneChanged || data["phone_number"] != nil {
                phoneNumber = dataFields.string("phone_number") { ReferenceFieldRules.phoneNumberProblem($0) }
            }
            fields.problems += dataFields.problems
        case let other?:
            fields.problems.append(.init(field: "data", reason: "must be an object, not \(other.typeName)"))
        }

        func isGiven(_ value: JSONValue?) -> Bool { value != nil && value != .null }
        var echo: EchoCredentials?
        switch object["echo"] {
        case nil, .null?:
            if !isGiven(object["oauth2"]) { fields.problems.append(.init(field: "echo", reason: "is required")) }
        case .object(let echoObject)?:
            var echoFields = ReferenceFieldReader(object: echoObject, path: "echo.")
            let serviceProvider = echoFields.string("service_provider") { ReferenceFieldRules.serviceProviderProblem($0) }
            let authorization = echoFields.string("authorization") { ReferenceFieldRules.authorizationProblem($0) }
            fields.problems += echoFields.problems
            if let serviceProvider, let authorization {
                echo = EchoCredentials(serviceProvider: serviceProvider, authorization: Secret(authorization))
            }
        case let other?:
            fields.problems.append(.init(field: "echo", reason: "must be an object, not \(other.typeName)"))
        }

        var oauth2: OAuth2Credentials?
        if isGiven(object["oauth2"]) {
            if isGiven(object["echo"]) {
                fields.problems.append(.init(field: "oauth2", reason: "must not be sent with echo: an event carries exactly one of echo and oauth2"))
            } else if case .object(let oauth2Object)? = object["oauth2"] {
                var oauth2Fields = ReferenceFieldReader(object: oauth2Object, path: "oauth2.")
                oauth2 = oauth2Fields.string("access_token") { ReferenceFieldRules.accessTokenProblem($0) }
                    .map { OAuth2Credentials(accessToken: Secret($0)) }
                fields.problems += oauth2Fields.problems
            } else {
                fields.problems.append(.init(field: "oauth2", reason: "must be an object, not \(object["oauth2"]!.typeName)"))
            }
        }

        guard fields.problems.isEmpty, let id, let type, let userID, let occurredText,
              let occurredAt = RFC3339.parse(occurredText), echo != nil || oauth2 != nil
        else {
            throw .invalidFields(fields.problems)
        }
        return IncomingEvent(
            id: id, type: type, userID: userID, occurredAt: occurredAt, phoneNumber: phoneNumber,
            echo: echo, oauth2: oauth2, fingerprint: Array(SHA256.hash(data: document.canonicalEncoding()))
        )
    }
}

/// Reads string fields of one JSON object, recording a problem for each bad one.
private struct ReferenceFieldReader {
    let object: [String: JSONValue]
    let path: String
    var problems: [FieldProblem] = []

    /// The field's string value if it is present, a string and passes `check` (which returns
    /// the reason it fails, or nil). Reasons never quote the value: some fields are secrets.
    mutating func string(_ name: String, check: (String) -> String?) -> String? {
        switch object[name] {
        case nil, .null?:
            problems.append(.init(field: path + name, reason: "is required"))
        case .string(let value)?:
            if let reason = check(value) {
                problems.append(.init(field: path + name, reason: reason))
                return nil
            }
            return value
        case let other?:
            problems.append(.init(field: path + name, reason: "must be a string, not \(other.typeName)"))
        }
        return nil
    }
}

/// The field rules as they were, scalar by scalar and through `URLComponents`.
enum ReferenceFieldRules {
    static let typeReason =
        "must be one of " + EventType.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")

    /// `id`: 1–128 characters of `[A-Za-z0-9._:-]`.
    static func eventIDProblem(_ id: String) -> String? {
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
    static func userIDProblem(_ userID: String) -> String? {
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
    static func phoneNumberProblem(_ phone: String) -> String? {
        let bytes = Array(phone.utf8)
        guard bytes.count >= 3, bytes.count <= 16, bytes[0] == UInt8(ascii: "+"),
              bytes[1] >= UInt8(ascii: "1"), bytes[1] <= UInt8(ascii: "9"),
              bytes.dropFirst().allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return "must be an E.164 phone number such as +15555550100" }
        return nil
    }

    /// `echo.authorization`: an OAuth 1.0a header, one line of printable text. Its fine
    /// structure is checked at verification, where a bad header rejects the event.
    static func authorizationProblem(_ header: String) -> String? {
        guard header.hasPrefix("OAuth ") else { return "must be an OAuth 1.0a header starting with \"OAuth \"" }
        guard !header.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return "must not contain control characters"
        }
        return nil
    }

    /// `oauth2.access_token`: RFC 6750 §2.1's `b64token`, 1 to 4096 bytes.
    static func accessTokenProblem(_ token: String) -> String? {
        guard (1...4096).contains(token.utf8.count) else { return "must be 1 to 4096 characters long" }
        let matches = token.wholeMatch(of: /[A-Za-z0-9\-._~+\/]+=*/) != nil && token.allSatisfy(\.isASCII)
        return matches ? nil : "must be an OAuth 2 bearer token: letters, digits and - . _ ~ + /, then any = padding"
    }

    /// `echo.service_provider`: an absolute URL (scheme and host). Whether its scheme and
    /// host are acceptable is decided at verification, where a refusal rejects the event.
    static func serviceProviderProblem(_ url: String) -> String? {
        if url.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "must not contain control characters"
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme, !scheme.isEmpty,
              let host = components.host, !host.isEmpty
        else { return "must be an absolute URL such as https://api.example.com/1.1/account/verify_credentials.json" }
        return nil
    }
}
