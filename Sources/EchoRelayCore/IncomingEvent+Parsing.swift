import Crypto
import Foundation

extension IncomingEvent {
    /// Parses and validates a `POST /v1/events` body, collecting every field problem rather
    /// than stopping at the first, so the provider can fix its request in one go.
    ///
    /// `EventBodyReader` reads the body in one pass; a body it does not answer for (numbers,
    /// repeated keys, anything but strict JSON) is read by the reference path instead, which is
    /// what this parser always was: `JSONValue.parse`, then SHA-256 of `canonicalEncoding()`.
    /// Both give the same answers and fingerprints for every body.
    ///
    /// A body with neither proof is refused naming `missingProof` as required: the proof the
    /// relay takes (`AcceptedProofs.missingProof`).
    public static func parse(body: UnsafeRawBufferPointer, missingProof: VerificationPath = .echo) throws(EventParseError) -> IncomingEvent {
        if let read = try EventBodyReader.read(body) {
            return try validated(read.fields, missingProof: missingProof) { Array(SHA256.hash(data: read.canonical)) }
        }
        let document = try referenceDocument(body)
        return try validated(EventBodyFields(document: document), missingProof: missingProof) {
            Array(SHA256.hash(data: JSONValue.object(document).canonicalEncoding()))
        }
    }

    public static func parse(body: [UInt8], missingProof: VerificationPath = .echo) throws(EventParseError) -> IncomingEvent {
        try body.withUnsafeBufferPointer { (bytes) throws(EventParseError) in
            try parse(body: UnsafeRawBufferPointer(bytes), missingProof: missingProof)
        }
    }

    /// The body decoded by `JSONDecoder`, refused in the order the parser always refused it.
    private static func referenceDocument(_ body: UnsafeRawBufferPointer) throws(EventParseError) -> [String: JSONValue] {
        guard String(validating: body, as: UTF8.self) != nil else {
            throw .malformed(MalformedBodyReason.notUTF8)
        }
        let document: JSONValue
        do {
            document = try JSONValue.parse(body)
        } catch is JSONValue.TooDeep {
            throw .malformed(MalformedBodyReason.tooDeep)
        } catch {
            throw .malformed(MalformedBodyReason.notJSON)
        }
        guard let object = document.objectValue else {
            throw .malformed(MalformedBodyReason.notObject(document.typeName))
        }
        return object
    }

    /// The event, if every field passes its rule; `fingerprint` is computed only then.
    private static func validated(
        _ fields: EventBodyFields, missingProof: VerificationPath, fingerprint: () -> [UInt8]
    ) throws(EventParseError) -> IncomingEvent {
        var problems = FieldProblems()
        let id = problems.string("id", fields.id, check: EventFieldRules.eventIDProblem)
        let type = problems.string("type", fields.type) { EventType(rawValue: $0) == nil ? EventFieldRules.typeReason : nil }
            .flatMap(EventType.init(rawValue:))
        let userID = problems.string("user_id", fields.userID, check: EventFieldRules.userIDProblem)
        var occurredAt: Date?
        _ = problems.string("occurred_at", fields.occurredAt) { text in
            guard let date = RFC3339.parse(text) else { return "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z" }
            guard TextRules.isInStoredRange(date) else { return TextRules.timeRangeReason }
            occurredAt = date
            return nil
        }

        var phoneNumber: String?
        let phoneRequired = type?.descriptor.phoneNumber == .required
        switch fields.data {
        case nil, .null?:
            if let type, phoneRequired { problems.list.append(.init(field: "data", reason: "is required for \(type.rawValue)")) }
        case .object?:
            if phoneRequired || fields.phoneNumber != nil {
                phoneNumber = problems.string("data.phone_number", fields.phoneNumber, check: EventFieldRules.phoneNumberProblem)
            }
        case let other?:
            problems.list.append(.init(field: "data", reason: "must be an object, not \(other.typeName)"))
        }

        var echo: EchoCredentials?
        switch fields.echo {
        case nil, .null?:
            if !fields.oauth2.isGiven { problems.list.append(.init(field: missingProof.rawValue, reason: "is required")) }
        case .object?:
            let serviceProvider = problems.string("echo.service_provider", fields.serviceProvider, check: EventFieldRules.serviceProviderProblem)
            let authorization = problems.string("echo.authorization", fields.authorization, check: EventFieldRules.authorizationProblem)
            if let serviceProvider, let authorization {
                echo = EchoCredentials(serviceProvider: serviceProvider, authorization: Secret(authorization))
            }
        case let other?:
            problems.list.append(.init(field: "echo", reason: "must be an object, not \(other.typeName)"))
        }

        var oauth2: OAuth2Credentials?
        switch fields.oauth2 {
        case nil, .null?:
            break
        case _ where fields.echo.isGiven:
            problems.list.append(.init(field: "oauth2", reason: EventFieldRules.bothProofsReason))
        case .object?:
            oauth2 = problems.string("oauth2.access_token", fields.accessToken, check: EventFieldRules.accessTokenProblem)
                .map { OAuth2Credentials(accessToken: Secret($0)) }
        case let other?:
            problems.list.append(.init(field: "oauth2", reason: "must be an object, not \(other.typeName)"))
        }

        guard problems.list.isEmpty, let id, let type, let userID, let occurredAt, echo != nil || oauth2 != nil else {
            throw .invalidFields(problems.list)
        }
        return IncomingEvent(
            id: id, type: type, userID: userID, occurredAt: occurredAt, phoneNumber: phoneNumber,
            echo: echo, oauth2: oauth2, fingerprint: fingerprint()
        )
    }
}

extension Optional<FieldValue> {
    /// Present with a value other than `null`.
    var isGiven: Bool {
        switch self {
        case nil, .null?: false
        default: true
        }
    }
}

/// The problems found so far, in the order the fields are checked.
private struct FieldProblems {
    var list: [FieldProblem] = []

    /// The field's string value if it is present, a string and passes `check` (which returns
    /// the reason it fails, or nil). Reasons never quote the value: some fields are secrets.
    mutating func string(_ field: String, _ value: FieldValue?, check: (String) -> String?) -> String? {
        switch value {
        case nil, .null?:
            list.append(.init(field: field, reason: "is required"))
        case .string(let text)?:
            if let reason = check(text) {
                list.append(.init(field: field, reason: reason))
                return nil
            }
            return text
        case let other?:
            list.append(.init(field: field, reason: "must be a string, not \(other.typeName)"))
        }
        return nil
    }
}

/// The texts of `EventParseError.malformed`, shared by the reader and the reference path.
enum MalformedBodyReason {
    static let notUTF8 = "the body is not valid UTF-8"
    static let notJSON = "the body is not valid JSON"
    static let tooDeep = "the body is not accepted: \(JSONValue.TooDeep())"

    static func notObject(_ typeName: String) -> String {
        "the body must be a JSON object, not \(typeName)"
    }
}
