import EchoRelayCore

/// What a verified SET means to EchoRelay: a session update for a user (CAEP and RISC events
/// mapped onto EchoRelay's three types), the transmitter's verification event, or an event
/// type EchoRelay does not relay.
public enum SecurityEventMeaning: Sendable, Equatable {
    /// A session update: `phoneNumber` is the new number of a `phone.changed`.
    case update(EventType, subject: SecurityEventSubject, phoneNumber: String?)
    /// The SSF verification event: recorded with its `state`, nothing delivered.
    case verification(state: String?)
    /// Accepted and recorded, not delivered: why.
    case ignored(String)

    public static let credentialChange = "https://schemas.openid.net/secevent/caep/event-type/credential-change"
    public static let tokenClaimsChange = "https://schemas.openid.net/secevent/caep/event-type/token-claims-change"
    public static let identifierChanged = "https://schemas.openid.net/secevent/risc/event-type/identifier-changed"
    public static let accountDisabled = "https://schemas.openid.net/secevent/risc/event-type/account-disabled"
    public static let accountPurged = "https://schemas.openid.net/secevent/risc/event-type/account-purged"
    public static let verificationEvent = "https://schemas.openid.net/secevent/ssf/event-type/verification"

    /// The meaning of `event`, whose subject is the SET's `sub_id` or, for older transmitters,
    /// the event's own `subject`; an `iss_sub` subject counts only when its `iss` is `issuer`.
    public init(_ event: VerifiedSecurityEvent, issuer: String) {
        let claims = event.event.objectValue ?? [:]
        let subject = SecurityEventSubject(event.subject ?? claims["subject"], issuer: issuer)
        switch event.eventType {
        case Self.credentialChange, Self.tokenClaimsChange:
            self = .update(.tokenRotated, subject: subject, phoneNumber: nil)
        case Self.accountDisabled, Self.accountPurged:
            self = .update(.accountDeactivated, subject: subject, phoneNumber: nil)
        case Self.identifierChanged:
            // A phone change: the old identifier (the event's subject) or the new value is a
            // phone number; an email change arrives as the same event and is not relayed.
            let newValue = claims["new-value"]?.stringValue
            let oldIsPhone = claims["subject"]?.objectValue?["format"]?.stringValue == "phone_number"
            guard let newValue, oldIsPhone || EventFieldRules.phoneNumberProblem(newValue) == nil else {
                self = .ignored("an identifier change that is not a phone number's")
                return
            }
            guard EventFieldRules.phoneNumberProblem(newValue) == nil else {
                self = .ignored("a phone change whose new value is not an E.164 number")
                return
            }
            // The user is the SET's sub_id when it names one; the event's subject is the old number.
            let user = event.subject.map { SecurityEventSubject($0, issuer: issuer) } ?? subject
            self = .update(.phoneChanged, subject: user, phoneNumber: newValue)
        case Self.verificationEvent:
            self = .verification(state: claims["state"]?.stringValue)
        default:
            self = .ignored("an event type EchoRelay does not relay")
        }
    }
}

/// Whom a SET is about (RFC 9493 subject identifiers, SSF complex subjects).
public enum SecurityEventSubject: Sendable, Equatable {
    /// The provider's user id: `iss_sub` of our transmitter, or `opaque`.
    case user(String)
    /// Only a phone number: it names a user if EchoRelay has verified that number for one.
    case phoneNumber(String)
    /// Nothing EchoRelay can tie to a user (an email, another issuer's subject, none).
    case unmatched(String)

    public init(_ value: JSONValue?, issuer: String) {
        guard let fields = value?.objectValue, let format = fields["format"]?.stringValue else {
            self = .unmatched("no subject")
            return
        }
        switch format {
        case "iss_sub":
            guard fields["iss"]?.stringValue == issuer, let sub = fields["sub"]?.stringValue, !sub.isEmpty else {
                self = .unmatched("an iss_sub subject of another issuer")
                return
            }
            self = .user(sub)
        case "opaque":
            guard let id = fields["id"]?.stringValue, !id.isEmpty else { self = .unmatched("an opaque subject without an id"); return }
            self = .user(id)
        case "phone_number":
            guard let phone = fields["phone_number"]?.stringValue else { self = .unmatched("a phone_number subject without a number"); return }
            self = .phoneNumber(phone)
        case "complex":
            guard let user = fields["user"] else { self = .unmatched("a complex subject without a user"); return }
            self = SecurityEventSubject(user, issuer: issuer)
        default:
            self = .unmatched("a subject of format \(format)")
        }
    }
}
