import EchoRelayCore

/// What a verified SET means to EchoRelay: a session update for a user (CAEP and RISC events
/// mapped onto EchoRelay's three types by `SecurityEventMapping.table`), the transmitter's
/// verification event, an event recorded for support only, or one EchoRelay does not relay.
public enum SecurityEventMeaning: Sendable, Equatable {
    /// A session update: `phoneNumber` is the new number of a `phone.changed`; `reason` names
    /// why a session ended (`session_revoked`, `tokens_revoked`), shown to support and delivered.
    case update(EventType, subject: SecurityEventSubject, phoneNumber: String?, reason: String? = nil)
    /// The SSF verification event: recorded with its `state`, nothing delivered.
    case verification(state: String?)
    /// Recorded and shown to support, not delivered: what it says.
    case noted(String)
    /// The user's verified email is now `email` (RISC identifier-changed): kept, not delivered.
    case emailChange(subject: SecurityEventSubject, email: String)
    /// Accepted and recorded, not delivered: why.
    case ignored(String)

    public static let credentialChange = SecurityEventMapping.caep + "credential-change"
    public static let tokenClaimsChange = SecurityEventMapping.caep + "token-claims-change"
    public static let sessionRevoked = SecurityEventMapping.caep + "session-revoked"
    public static let identifierChanged = SecurityEventMapping.risc + "identifier-changed"
    public static let accountDisabled = SecurityEventMapping.risc + "account-disabled"
    public static let accountPurged = SecurityEventMapping.risc + "account-purged"
    public static let verificationEvent = SecurityEventMapping.ssf + "verification"

    /// The meaning of `event`, whose subject is the SET's `sub_id` or, for older transmitters,
    /// the event's own `subject`; an `iss_sub` subject counts only when its `iss` is `issuer`.
    public init(_ event: VerifiedSecurityEvent, issuer: String) {
        let claims = event.event.objectValue ?? [:]
        let subject = SecurityEventSubject(event.subject ?? claims["subject"], issuer: issuer)
        guard let mapping = SecurityEventMapping.named(event.eventType) else {
            self = .ignored("an event type EchoRelay does not relay")
            return
        }
        switch mapping.rule {
        case .update(let type, let reason):
            self = .update(type, subject: subject, phoneNumber: nil, reason: reason)
        case .claimsChange:
            // A changed phone_number claim is a phone change; any other claim change means the
            // tokens issued before it are stale: a rotation.
            let claimed = claims["claims"]?.objectValue?["phone_number"]
            if let number = claimed?.stringValue {
                self = EventFieldRules.phoneNumberProblem(number) == nil
                    ? .update(.phoneChanged, subject: subject, phoneNumber: number)
                    : .ignored("a phone_number claim change whose value is not an E.164 number")
            } else {
                self = .update(.tokenRotated, subject: subject, phoneNumber: nil)
            }
        case .identifierChange:
            self = Self.identifierChange(event, claims: claims, subject: subject, issuer: issuer)
        case .noted(let note):
            self = .noted(note)
        case .verification:
            self = .verification(state: claims["state"]?.stringValue)
        }
    }

    /// A phone change: the old identifier (the event's subject) or the new value is a phone
    /// number; an email change arrives as the same event and is not relayed.
    private static func identifierChange(
        _ event: VerifiedSecurityEvent, claims: [String: JSONValue], subject: SecurityEventSubject, issuer: String
    ) -> Self {
        let newValue = claims["new-value"]?.stringValue
        let oldIsPhone = claims["subject"]?.objectValue?["format"]?.stringValue == "phone_number"
        // An email change of a user the SET's sub_id names: that user's verified email.
        if let newValue, !oldIsPhone, newValue.contains("@"), let named = event.subject.map({ SecurityEventSubject($0, issuer: issuer) }),
           case .user = named {
            return .emailChange(subject: named, email: SecurityEventSubject.normalized(email: newValue))
        }
        guard let newValue, oldIsPhone || EventFieldRules.phoneNumberProblem(newValue) == nil else {
            return .ignored("an identifier change that is not a phone number's")
        }
        guard EventFieldRules.phoneNumberProblem(newValue) == nil else {
            return .ignored("a phone change whose new value is not an E.164 number")
        }
        // The user is the SET's sub_id when it names one; the event's subject is the old number.
        let user = event.subject.map { SecurityEventSubject($0, issuer: issuer) } ?? subject
        return .update(.phoneChanged, subject: user, phoneNumber: newValue)
    }
}

/// Whom a SET is about (RFC 9493 subject identifiers, SSF complex subjects).
public enum SecurityEventSubject: Sendable, Equatable {
    /// The provider's user id: `iss_sub` of our transmitter, or `opaque`.
    case user(String)
    /// Only a phone number: it names a user if EchoRelay has verified that number for one.
    case phoneNumber(String)
    /// Only an email address: it names a user if EchoRelay knows it as that user's verified email.
    case email(String)
    /// Nothing EchoRelay can tie to a user (another issuer's subject, none).
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
        case "email":
            guard let email = fields["email"]?.stringValue, !email.isEmpty else { self = .unmatched("an email subject without an address"); return }
            self = .email(SecurityEventSubject.normalized(email: email))
        case "complex":
            guard let user = fields["user"] else { self = .unmatched("a complex subject without a user"); return }
            self = SecurityEventSubject(user, issuer: issuer)
        default:
            self = .unmatched("a subject of format \(format)")
        }
    }

    /// Email addresses compare without case (RFC 9493 §3.2.2 leaves the domain case-insensitive,
    /// and providers treat the local part so too).
    public static func normalized(email: String) -> String {
        email.lowercased()
    }
}
