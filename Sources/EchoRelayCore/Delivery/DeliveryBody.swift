import Foundation

/// What a delivery's signed JSON body says (docs/subscribers.md): the event's and the
/// provider's values and the replay marker, never a credential, and nothing of the
/// subscription. Every subscription of an event gets the same body, so the delivery worker
/// keeps bodies by this value and writes each once.
public struct DeliveryBody: Hashable, Sendable {
    public var type: EventType
    public var eventID: String
    public var userID: String
    public var sequence: Int64
    public var occurredAt: Date
    public var verifiedAt: Date
    public var phoneNumber: String?
    public var previousPhoneNumber: String?
    /// Set for a replayed delivery: its marker is inside the signed body, so a receiver can
    /// tell a deliberate resend from a retry.
    public var replay: DeliveryReplay?
    /// Why a session ended (`data.reason`), when the provider said so.
    public var reason: String?

    public init(_ task: DeliveryTask) {
        type = task.type
        eventID = task.eventID
        userID = task.userID
        sequence = task.sequence
        occurredAt = task.occurredAt
        verifiedAt = task.verifiedAt
        phoneNumber = task.phoneNumber
        previousPhoneNumber = task.previousPhoneNumber
        replay = task.replay
        reason = task.reason
    }

    /// The body's bytes, written directly in the canonical form that
    /// `JSONValue.canonicalEncoding()` (`JSONEncoder`, sorted keys) gives the same document:
    /// the keys below stand in sorted order, with no white space, and strings are escaped as
    /// `JSONEncoder` escapes them.
    public func bytes() -> [UInt8] {
        var out = CanonicalJSONWriter(capacity: 320)
        out.appendLiteral("{\"data\":{")
        if type.descriptor.deliversPhoneNumber {
            out.appendLiteral("\"phone_number\":")
            if let phoneNumber { out.appendString(phoneNumber) } else { out.appendLiteral("null") }
            if let previousPhoneNumber {
                out.appendLiteral(",\"previous_phone_number\":")
                out.appendString(previousPhoneNumber)
            }
        }
        if let reason, type.descriptor.deliversSessionReason {
            out.appendLiteral(type.descriptor.deliversPhoneNumber ? ",\"reason\":" : "\"reason\":")
            out.appendString(reason)
        }
        out.appendLiteral("},\"event_id\":")
        out.appendString(eventID)
        out.appendLiteral(",\"occurred_at\":")
        out.appendString(RFC3339.format(occurredAt))
        if let replay {
            out.appendLiteral(",\"replay\":{\"at\":")
            out.appendString(RFC3339.format(replay.at))
            out.appendLiteral(",\"id\":")
            out.appendString(replay.id)
            out.appendLiteral("}")
        }
        out.appendLiteral(",\"sequence\":")
        out.appendLiteral(String(sequence))
        out.appendLiteral(",\"type\":")
        out.appendString(type.rawValue)
        out.appendLiteral(",\"user_id\":")
        out.appendString(userID)
        out.appendLiteral(",\"verified_at\":")
        out.appendString(RFC3339.format(verifiedAt))
        out.appendLiteral("}")
        return out.bytes
    }
}

extension DeliveryTask {
    /// The signed JSON body of this delivery.
    public func body() -> [UInt8] {
        DeliveryBody(self).bytes()
    }
}

extension CanonicalJSONWriter {
    /// Text that needs no escaping: punctuation, keys and numbers.
    mutating func appendLiteral(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }

    /// A JSON string: quoted, each scalar escaped as `JSONEncoder` escapes it.
    mutating func appendString(_ text: String) {
        append(UInt8(ascii: "\""))
        for scalar in text.unicodeScalars { appendEscaped(scalar) }
        append(UInt8(ascii: "\""))
    }
}
