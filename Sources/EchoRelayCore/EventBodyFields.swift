/// A value at one of the paths the event validator reads, reduced to what the validator needs:
/// its JSON type, and its text if it is a string.
enum FieldValue: Sendable, Equatable {
    case null
    case boolean
    case number
    case string(String)
    case array
    case object

    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool: self = .boolean
        case .integer, .number: self = .number
        case .string(let text): self = .string(text)
        case .array: self = .array
        case .object: self = .object
        }
    }

    /// The same words as `JSONValue.typeName`, for the same problem texts.
    var typeName: String {
        switch self {
        case .null: "null"
        case .boolean: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// The values of an event body at the paths the validator reads, nil where the key is absent.
/// The nested paths (`data.phone_number`, `echo.…`, `oauth2.…`) are filled only when their parent is an
/// object; nothing else of the body is kept.
struct EventBodyFields: Sendable, Equatable {
    var id: FieldValue?
    var type: FieldValue?
    var userID: FieldValue?
    var occurredAt: FieldValue?
    var data: FieldValue?
    var echo: FieldValue?
    var phoneNumber: FieldValue?
    var serviceProvider: FieldValue?
    var authorization: FieldValue?
    var oauth2: FieldValue?
    var accessToken: FieldValue?

    init() {}

    /// The same fields taken from a decoded document (the fallback path).
    init(document object: [String: JSONValue]) {
        id = object["id"].map(FieldValue.init)
        type = object["type"].map(FieldValue.init)
        userID = object["user_id"].map(FieldValue.init)
        occurredAt = object["occurred_at"].map(FieldValue.init)
        data = object["data"].map(FieldValue.init)
        echo = object["echo"].map(FieldValue.init)
        if case .object(let data)? = object["data"] {
            phoneNumber = data["phone_number"].map(FieldValue.init)
        }
        if case .object(let echo)? = object["echo"] {
            serviceProvider = echo["service_provider"].map(FieldValue.init)
            authorization = echo["authorization"].map(FieldValue.init)
        }
        oauth2 = object["oauth2"].map(FieldValue.init)
        if case .object(let oauth2)? = object["oauth2"] {
            accessToken = oauth2["access_token"].map(FieldValue.init)
        }
    }
}
