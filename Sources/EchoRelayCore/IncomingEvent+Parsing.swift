import Crypto
import Foundation

extension IncomingEvent {
    /// Parses and validates a `POST /v1/events` body, collecting every field problem rather
    /// than stopping at the first, so the provider can fix its request in one go.
    public static func parse(body: some Collection<UInt8>) throws(EventParseError) -> IncomingEvent {
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

        var fields = FieldReader(object: object, path: "")
        let id = fields.string("id") { EventFieldRules.eventIDProblem($0) }
        let type = fields.string("type") { EventType(rawValue: $0) == nil ? EventFieldRules.typeReason : nil }
            .flatMap(EventType.init(rawValue:))
        let userID = fields.string("user_id") { EventFieldRules.userIDProblem($0) }
        let occurredText = fields.string("occurred_at") { text in
            guard let date = RFC3339.parse(text) else { return "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z" }
            return TextRules.isInStoredRange(date) ? nil : TextRules.timeRangeReason
        }

        var phoneNumber: String?
        switch object["data"] {
        case nil, .null?:
            if type == .phoneChanged { fields.problems.append(.init(field: "data", reason: "is required for phone.changed")) }
        case .object(let data)?:
            var dataFields = FieldReader(object: data, path: "data.")
            if type == .phoneChanged || data["phone_number"] != nil {
                phoneNumber = dataFields.string("phone_number") { EventFieldRules.phoneNumberProblem($0) }
            }
            fields.problems += dataFields.problems
        case let other?:
            fields.problems.append(.init(field: "data", reason: "must be an object, not \(other.typeName)"))
        }

        var echo: EchoCredentials?
        switch object["echo"] {
        case nil, .null?:
            fields.problems.append(.init(field: "echo", reason: "is required"))
        case .object(let echoObject)?:
            var echoFields = FieldReader(object: echoObject, path: "echo.")
            let serviceProvider = echoFields.string("service_provider") { EventFieldRules.serviceProviderProblem($0) }
            let authorization = echoFields.string("authorization") { EventFieldRules.authorizationProblem($0) }
            fields.problems += echoFields.problems
            if let serviceProvider, let authorization {
                echo = EchoCredentials(serviceProvider: serviceProvider, authorization: Secret(authorization))
            }
        case let other?:
            fields.problems.append(.init(field: "echo", reason: "must be an object, not \(other.typeName)"))
        }

        guard fields.problems.isEmpty, let id, let type, let userID, let occurredText,
              let occurredAt = RFC3339.parse(occurredText), let echo
        else {
            throw .invalidFields(fields.problems)
        }
        return IncomingEvent(
            id: id, type: type, userID: userID, occurredAt: occurredAt, phoneNumber: phoneNumber,
            echo: echo, fingerprint: Array(SHA256.hash(data: document.canonicalEncoding()))
        )
    }
}

/// Reads string fields of one JSON object, recording a problem for each bad one.
private struct FieldReader {
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
