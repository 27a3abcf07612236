/// A kind of session update a provider can push (docs/identity-provider.md). Everything that
/// differs between kinds is in its `EventTypeDescriptor`, so parsing, verification, delivery
/// and the help texts ask the descriptor instead of naming types; adding a type is adding a
/// descriptor to `EventType.registry` ("Adding an event type" in docs/architecture.md).
///
/// A value is an index into the registry: copying one costs nothing, and only the registry's
/// names can be made, so every `EventType` in the process is one EchoRelay knows.
public struct EventType: Hashable, Sendable, RawRepresentable, Codable, CustomStringConvertible {
    private let index: Int

    /// The type named `rawValue`, or nil if the registry has none of that name.
    public init?(rawValue: String) {
        guard let index = Self.registry.firstIndex(where: { $0.name == rawValue }) else { return nil }
        self.index = index
    }

    public var descriptor: EventTypeDescriptor { Self.registry[index] }
    // The name alone, not a copy of the whole descriptor: rows and bodies ask for it often.
    public var rawValue: String { Self.registry[index].name }
    public var description: String { rawValue }

    /// Every type EchoRelay accepts, in the order help texts and the console list them.
    public static let allCases: [EventType] = registry.indices.map(EventType.init(index:))

    private init(index: Int) { self.index = index }

    /// A type of the registry by name; only for the names below, which the registry has.
    private init(registered name: String) {
        guard let type = EventType(rawValue: name) else { preconditionFailure("\(name) is not in EventType.registry") }
        self = type
    }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let type = EventType(rawValue: name) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: EventFieldRules.typeReason))
        }
        self = type
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension EventType {
    /// The registry. Its order is the one help texts, the console and the OpenAPI enums use.
    public static let registry: [EventTypeDescriptor] = [
        EventTypeDescriptor(
            name: "token.rotated",
            summary: "the user's session token was replaced",
            evidence: .sessionAlive,
            replacesToken: true
        ),
        EventTypeDescriptor(
            name: "phone.changed",
            summary: "the user's phone number changed",
            phoneNumber: .required,
            evidence: .sessionAliveShowingPushedPhone,
            deliversPhoneNumber: true
        ),
        EventTypeDescriptor(
            name: "account.deactivated",
            summary: "the user's account was closed",
            evidence: .sessionEnded,
            deliversSessionReason: true,
            userStateAfter: .deactivated
        ),
    ]

    // Names for the code that means one type in particular: the Shared Signals mapping, the
    // demo and the tests. Nothing on the event's path switches over them.
    public static let tokenRotated = EventType(registered: "token.rotated")
    public static let phoneChanged = EventType(registered: "phone.changed")
    public static let accountDeactivated = EventType(registered: "account.deactivated")

    /// "token.rotated, phone.changed or account.deactivated", for help texts.
    public static var namesInProse: String {
        let names = allCases.map(\.rawValue)
        return names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
    }
}

/// What sets one event type apart from the others, from the push to the delivery.
public struct EventTypeDescriptor: Sendable {
    /// Whether a field of the pushed `data` object is required, or read when present.
    public enum Presence: Sendable { case required, optional }

    /// What the provider's OAuth Echo answer must show for an event of the type to be verified
    /// (the outcome table of docs/identity-provider.md).
    public enum Evidence: Sendable {
        /// A `200` naming the event's user: the pushed token is alive and the user's.
        case sessionAlive
        /// As `sessionAlive`, and the account's `phone_number` is the pushed `data.phone_number`.
        case sessionAliveShowingPushedPhone
        /// A `401` with error code 89 (the token is dead) for a token once confirmed for this
        /// user. A `200` proves the opposite, so the event is rejected as forged.
        case sessionEnded
    }

    /// The `type` value on the wire, in deliveries and in the database.
    public let name: String
    /// One line for help texts: what happened to the user.
    public let summary: String
    /// `data.phone_number` of a push: required, or checked and kept when present.
    public let phoneNumber: Presence
    public let evidence: Evidence
    /// Whether a delivery's `data` carries `phone_number` (as the provider answered it) and
    /// `previous_phone_number`; otherwise a delivery's `data` is `{}`.
    public let deliversPhoneNumber: Bool
    /// Whether a delivery's `data` carries `reason`, why the session ended, when a Shared
    /// Signals event said so (`session_revoked`, `tokens_revoked`).
    public let deliversSessionReason: Bool
    /// The user's state once an event of the type is verified (`GET /v1/users/{user_id}`).
    public let userStateAfter: UserState.State
    /// Whether the token it confirms replaces the user's earlier ones: their death no longer
    /// proves that the session ended (the OAuth 2 deactivation rule).
    public let replacesToken: Bool

    public init(
        name: String, summary: String, phoneNumber: Presence = .optional, evidence: Evidence,
        deliversPhoneNumber: Bool = false, deliversSessionReason: Bool = false, userStateAfter: UserState.State = .active,
        replacesToken: Bool = false
    ) {
        self.deliversSessionReason = deliversSessionReason
        self.replacesToken = replacesToken
        self.name = name
        self.summary = summary
        self.phoneNumber = phoneNumber
        self.evidence = evidence
        self.deliversPhoneNumber = deliversPhoneNumber
        self.userStateAfter = userStateAfter
    }
}
