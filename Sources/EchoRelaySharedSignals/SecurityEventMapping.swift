import EchoRelayCore

/// One event type URI of CAEP, RISC or SSF and what EchoRelay makes of it. `table` is the
/// whole mapping: an event type not in it is recorded and ignored.
public struct SecurityEventMapping: Sendable {
    public static let caep = "https://schemas.openid.net/secevent/caep/event-type/"
    public static let risc = "https://schemas.openid.net/secevent/risc/event-type/"
    public static let ssf = "https://schemas.openid.net/secevent/ssf/event-type/"

    public enum Rule: Sendable, Equatable {
        /// Always an event of this type; `reason` travels with it to support and subscribers.
        case update(EventType, reason: String?)
        /// CAEP token-claims-change: a `phone_number` claim makes it a `phone.changed`, any
        /// other claim a `token.rotated`.
        case claimsChange
        /// RISC identifier-changed: a `phone.changed` when the identifier is a phone number.
        case identifierChange
        /// Recorded and shown to support, not delivered: what it says.
        case noted(String)
        /// The SSF verification event.
        case verification
    }

    /// The event type URI.
    public let eventType: String
    public let rule: Rule

    /// The event types EchoRelay maps, in the order a stream registration requests them.
    public static let table: [SecurityEventMapping] = [
        .init(eventType: caep + "credential-change", rule: .update(.tokenRotated, reason: nil)),
        .init(eventType: caep + "token-claims-change", rule: .claimsChange),
        .init(eventType: caep + "session-revoked", rule: .update(.accountDeactivated, reason: "session_revoked")),
        .init(eventType: risc + "sessions-revoked", rule: .update(.accountDeactivated, reason: "session_revoked")),
        .init(eventType: risc + "tokens-revoked", rule: .update(.accountDeactivated, reason: "tokens_revoked")),
        .init(eventType: risc + "account-disabled", rule: .update(.accountDeactivated, reason: nil)),
        .init(eventType: risc + "account-purged", rule: .update(.accountDeactivated, reason: nil)),
        .init(eventType: risc + "identifier-changed", rule: .identifierChange),
        .init(eventType: risc + "account-enabled",
              rule: .noted("the account was enabled again; recorded for support, not delivered")),
        .init(eventType: risc + "account-credential-change-required",
              rule: .noted("the provider asks the user to change a credential; recorded for support, not delivered")),
        .init(eventType: ssf + "verification", rule: .verification),
    ]

    private static let byEventType = Dictionary(uniqueKeysWithValues: table.map { ($0.eventType, $0) })

    public static func named(_ eventType: String) -> SecurityEventMapping? {
        byEventType[eventType]
    }

    /// What a stream asks its transmitter for (`events_requested`): every mapped type, the
    /// verification event among them.
    public static var eventsRequested: [String] { table.map(\.eventType) }
}
