import Foundation

/// The OAuth Echo credentials pushed with an event: where to re-verify, and the signed
/// `Authorization` header to do it with. The header is a credential and never printed.
public struct EchoCredentials: Sendable, Equatable {
    public var serviceProvider: String
    public var authorization: Secret

    public init(serviceProvider: String, authorization: Secret) {
        self.serviceProvider = serviceProvider
        self.authorization = authorization
    }
}

/// A session update as the provider pushed it to `POST /v1/events`, validated but not yet
/// verified: nothing in it is trusted until OAuth Echo confirms it.
public struct IncomingEvent: Sendable {
    public static let maximumBodySize = 64 * 1024

    public var id: String
    public var type: EventType
    public var userID: String
    public var occurredAt: Date
    /// `data.phone_number` as pushed (required where the type's descriptor says so, kept if present otherwise).
    public var phoneNumber: String?
    public var echo: EchoCredentials
    /// SHA-256 of the body's canonical JSON: the same `id` with the same fingerprint is a
    /// retry; with another fingerprint it is a conflict. Key order and spacing do not count.
    public var fingerprint: [UInt8]

    public init(
        id: String, type: EventType, userID: String, occurredAt: Date, phoneNumber: String?,
        echo: EchoCredentials, fingerprint: [UInt8]
    ) {
        self.id = id
        self.type = type
        self.userID = userID
        self.occurredAt = occurredAt
        self.phoneNumber = phoneNumber
        self.echo = echo
        self.fingerprint = fingerprint
    }
}

/// One reason a field was refused, named by its dotted path (`data.phone_number`).
public struct FieldProblem: Sendable, Equatable, Codable, CustomStringConvertible {
    public var field: String
    public var reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { "\(field): \(reason)" }
}

public enum EventParseError: Error, Equatable {
    /// The body is not a JSON object at all (bad UTF-8, bad JSON, another JSON type).
    case malformed(String)
    /// The body is a JSON object, and these fields are wrong.
    case invalidFields([FieldProblem])
}
