/// The JSON bodies of EchoRelay's HTTP API (`openapi.yaml`): the handlers encode them, the
/// CLI decodes them, and `OpenAPITests` holds each type's members to its schema's properties,
/// both ways. Members are named as on the wire; times are RFC 3339 text as the API writes them.
public enum API {}

/// An optional member written as `null` rather than left out: the API's bodies always carry
/// every member of their schema ("null until there is an outcome"). Decoding takes `null` or
/// an absent member as nil.
@propertyWrapper
public struct Nullable<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension KeyedDecodingContainer {
    /// An absent member is nil too.
    public func decode<Value>(_ type: Nullable<Value>.Type, forKey key: Key) throws -> Nullable<Value> {
        try decodeIfPresent(type, forKey: key) ?? Nullable(wrappedValue: nil)
    }
}
