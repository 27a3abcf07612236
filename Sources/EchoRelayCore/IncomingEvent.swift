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

/// The OAuth 2 proof pushed with an event: the user's current access token, which EchoRelay
/// introspects (RFC 7662) with the configured authorization server. A credential, never printed.
public struct OAuth2Credentials: Sendable, Equatable {
    public var accessToken: Secret

    public init(accessToken: Secret) {
        self.accessToken = accessToken
    }
}

/// A session update as the provider pushed it to `POST /v1/events`, validated but not yet
/// verified: nothing in it is trusted until the provider confirms it, over OAuth Echo or
/// OAuth 2 (exactly one of `echo` and `oauth2` is set).
public struct IncomingEvent: Sendable {
    public static let maximumBodySize = 64 * 1024

    public var id: String
    public var type: EventType
    public var userID: String
    public var occurredAt: Date
    /// `data.phone_number` as pushed (required where the type's descriptor says so, kept if present otherwise).
    public var phoneNumber: String?
    public var echo: EchoCredentials?
    public var oauth2: OAuth2Credentials?
    /// SHA-256 of the body's canonical JSON: the same `id` with the same fingerprint is a
    /// retry; with another fingerprint it is a conflict. Key order and spacing do not count.
    public var fingerprint: [UInt8]

    public init(
        id: String, type: EventType, userID: String, occurredAt: Date, phoneNumber: String?,
        echo: EchoCredentials?, oauth2: OAuth2Credentials? = nil, fingerprint: [UInt8]
    ) {
        self.id = id
        self.type = type
        self.userID = userID
        self.occurredAt = occurredAt
        self.phoneNumber = phoneNumber
        self.echo = echo
        self.oauth2 = oauth2
        self.fingerprint = fingerprint
    }

    /// How the provider will be asked about it.
    public var path: VerificationPath { oauth2 == nil ? .echo : .oauth2 }
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
