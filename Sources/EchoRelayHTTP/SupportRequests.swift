import EchoRelayCore
import Foundation

/// The bodies of support actions, parsed and validated with every bad field named. Unknown
/// fields are refused: a misspelt filter (`"user"` for `"user_id"`) must not silently widen a
/// bulk replay to every user.
public struct ReplayEventRequest: Sendable, Equatable {
    public var reason: String
    public var subscriptionIDs: [String]?

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> ReplayEventRequest {
        var reader = try SupportBodyReader(body)
        let reason = reader.reason()
        let subscriptionIDs = reader.stringArray("subscription_ids", allowEmpty: false)
        try reader.finish()
        return ReplayEventRequest(reason: reason!, subscriptionIDs: subscriptionIDs)
    }
}

public struct BulkReplayRequest: Sendable, Equatable {
    public var reason: String
    public var filter: ReplayFilter
    public var dryRun: Bool

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> BulkReplayRequest {
        var reader = try SupportBodyReader(body)
        let reason = reader.reason()
        var filter = ReplayFilter()
        filter.userID = reader.string("user_id") { EventFieldRules.userIDProblem($0) }
        filter.subscriptionID = reader.string("subscription_id") { $0.isEmpty ? "must not be empty" : nil }
        filter.types = reader.stringArray("types", allowEmpty: false, check: { EventType(rawValue: $0) == nil ? "each " + EventFieldRules.typeReason : nil })?
            .compactMap(EventType.init(rawValue:))
        filter.since = reader.time("since")
        filter.until = reader.time("until")
        filter.status = reader.string("status") {
            DeliveryStatus(rawValue: $0) == nil ? "must be one of \"pending\", \"delivered\", \"dead\", \"cancelled\"" : nil
        }.flatMap(DeliveryStatus.init(rawValue:))
        let dryRun = reader.bool("dry_run") ?? false
        reader.checkRange(since: filter.since, until: filter.until)
        try reader.finish()
        return BulkReplayRequest(reason: reason!, filter: filter, dryRun: dryRun)
    }
}

/// `POST /v1/subscriptions/{id}/recover`. `reason` is optional here: an app backend recovering
/// its own subscription says why only if it wants to; the audit log records the window anyway.
public struct RecoverRequest: Sendable, Equatable {
    public var reason: String?
    public var since: Date
    public var until: Date?
    public var dryRun: Bool
    /// Staff's explicit ask for events received before the subscription was created.
    public var beforeCreation: Bool = false

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> RecoverRequest {
        var reader = try SupportBodyReader(body)
        let reason = reader.reason(required: false)
        let since = reader.time("since", required: true)
        let until = reader.time("until")
        let dryRun = reader.bool("dry_run") ?? false
        let beforeCreation = reader.bool("before_creation") ?? false
        reader.checkRange(since: since, until: until)
        try reader.finish()
        return RecoverRequest(reason: reason, since: since!, until: until, dryRun: dryRun, beforeCreation: beforeCreation)
    }
}

public struct RedriveRequest: Sendable, Equatable {
    public var reason: String
    public var filter: DeadLetterFilter
    public var dryRun: Bool

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> RedriveRequest {
        var reader = try SupportBodyReader(body)
        let reason = reader.reason()
        var filter = DeadLetterFilter()
        filter.subscriptionID = reader.string("subscription_id") { $0.isEmpty ? "must not be empty" : nil }
        filter.since = reader.time("since")
        filter.until = reader.time("until")
        let dryRun = reader.bool("dry_run") ?? false
        reader.checkRange(since: filter.since, until: filter.until)
        try reader.finish()
        return RedriveRequest(reason: reason!, filter: filter, dryRun: dryRun)
    }
}

public struct ReverifyRequest: Sendable, Equatable {
    public var reason: String
    /// Fresh echo headers, or the user's current access token.
    public var proof: VerificationProof

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> ReverifyRequest {
        try parse(body, missingProof: .echo)
    }

    /// `missingProof`: the proof a body with neither is asked for (`AcceptedProofs.missingProof`).
    public static func parse(_ body: some Collection<UInt8>, missingProof: VerificationPath) throws(EventParseError) -> ReverifyRequest {
        var reader = try SupportBodyReader(body)
        let reason = reader.reason()
        let proof = reader.proof(missingProof: missingProof)
        try reader.finish()
        return ReverifyRequest(reason: reason!, proof: proof!)
    }
}

/// The body of an action that needs only a reason (cancel).
public struct ReasonRequest: Sendable, Equatable {
    public var reason: String

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> ReasonRequest {
        var reader = try SupportBodyReader(body)
        let reason = reader.reason()
        try reader.finish()
        return ReasonRequest(reason: reason!)
    }
}

/// The rule for the `reason` of a support action: why it was done, for the audit log.
public enum SupportReason {
    public static let maximumLength = 1000

    public static func problem(_ reason: String) -> String? {
        let trimmed = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return "must say why: a support action needs a reason for the audit log" }
        if reason.count > maximumLength { return "must be at most \(maximumLength) characters" }
        if reason.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" }) {
            return "must not contain control characters"
        }
        return nil
    }
}

/// `POST /v1/sets/stream`: how the transmitter delivers, and for push where.
public struct StreamCreateRequest: Sendable, Equatable {
    public var delivery: SecurityEventStream.Delivery
    public var endpointURL: String?
    public var description: String?

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> StreamCreateRequest {
        var reader = try SupportBodyReader(body)
        let delivery = reader.string("delivery") { SecurityEventStream.Delivery(rawValue: $0) == nil ? "must be push or poll" : nil }
            .flatMap(SecurityEventStream.Delivery.init(rawValue:))
        if delivery == nil, !reader.hasProblem("delivery") { reader.problem("delivery", "is required: push or poll") }
        let endpointURL = reader.string("endpoint_url", check: StreamCreateRequest.endpointProblem)
        if delivery == .push, endpointURL == nil, !reader.hasProblem("endpoint_url") {
            reader.problem("endpoint_url", "is required for push: the public https URL of this relay's POST /v1/sets")
        }
        if delivery == .poll, endpointURL != nil {
            reader.problem("endpoint_url", "is for push only: a poll stream's endpoint is the transmitter's")
        }
        let description = reader.string("description") { $0.count > 256 ? "must be at most 256 characters" : nil }
        try reader.finish()
        return StreamCreateRequest(delivery: delivery!, endpointURL: endpointURL, description: description)
    }

    static func endpointProblem(_ url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              ["http", "https"].contains(scheme), components.host?.isEmpty == false else {
            return "must be an absolute http or https URL"
        }
        return nil
    }
}

/// `PATCH /v1/sets/stream`: the members a receiver may change.
public struct StreamUpdateRequest: Sendable, Equatable {
    public var eventsRequested: [String]?
    public var description: String?
    public var endpointURL: String?

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> StreamUpdateRequest {
        var reader = try SupportBodyReader(body)
        let events = reader.stringArray("events_requested", allowEmpty: false)
        let description = reader.string("description") { $0.count > 256 ? "must be at most 256 characters" : nil }
        let endpointURL = reader.string("endpoint_url", check: StreamCreateRequest.endpointProblem)
        if events == nil, description == nil, endpointURL == nil, !reader.hasAnyProblem {
            reader.problem("events_requested", "give at least one of events_requested, description and endpoint_url")
        }
        try reader.finish()
        return StreamUpdateRequest(eventsRequested: events, description: description, endpointURL: endpointURL)
    }
}

/// `POST /v1/sets/stream/status`.
public struct StreamStatusRequest: Sendable, Equatable {
    public var status: SecurityEventStream.Status
    public var reason: String?

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> StreamStatusRequest {
        var reader = try SupportBodyReader(body)
        let status = reader.string("status") { SecurityEventStream.Status(rawValue: $0) == nil ? "must be enabled, paused or disabled" : nil }
            .flatMap(SecurityEventStream.Status.init(rawValue:))
        if status == nil, !reader.hasProblem("status") { reader.problem("status", "is required: enabled, paused or disabled") }
        let reason = reader.string("reason") { $0.count > 256 ? "must be at most 256 characters" : nil }
        try reader.finish()
        return StreamStatusRequest(status: status!, reason: reason)
    }
}

/// `POST /v1/sets/stream/verify`: how long to wait for the verification event.
public struct StreamVerifyRequest: Sendable, Equatable {
    public static let timeouts = 1 ... 25
    public var timeout: Duration

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> StreamVerifyRequest {
        guard !body.isEmpty else { return StreamVerifyRequest(timeout: .seconds(20)) }
        var reader = try SupportBodyReader(body)
        let seconds = reader.integer("timeout_seconds", in: timeouts)
        try reader.finish()
        return StreamVerifyRequest(timeout: .seconds(seconds ?? 20))
    }
}

/// `POST /v1/tokens`: the new token's role and name, and why (optional, for the audit log).
public struct TokenCreateRequest: Sendable, Equatable {
    public var role: Role
    public var name: String
    public var reason: String?

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> TokenCreateRequest {
        var reader = try SupportBodyReader(body)
        let role = reader.string("role") { Role(rawValue: $0) == nil ? "must be admin, support or app" : nil }
        let name = reader.string("name") { text in
            do throws(AccessTokenNameError) {
                try AccessTokenName.validate(text)
                return nil
            } catch {
                return error.reason
            }
        }
        if role == nil, !reader.hasProblem("role") { reader.problem("role", "is required: admin, support or app") }
        if name == nil, !reader.hasProblem("name") { reader.problem("name", "is required: what the token is for, 1 to 100 printable characters") }
        let reason = reader.reason(required: false)
        try reader.finish()
        return TokenCreateRequest(role: Role(rawValue: role!)!, name: name!, reason: reason)
    }
}

/// `POST /v1/tokens/{id}/revoke`: an empty body, or `{"reason": …}` for the audit log.
public struct TokenRevokeRequest: Sendable, Equatable {
    public var reason: String?

    public static func parse(_ body: some Collection<UInt8>) throws(EventParseError) -> TokenRevokeRequest {
        guard !body.isEmpty else { return TokenRevokeRequest(reason: nil) }
        var reader = try SupportBodyReader(body)
        let reason = reader.reason(required: false)
        try reader.finish()
        return TokenRevokeRequest(reason: reason)
    }
}

/// Reads the fields of one JSON object body, collecting a problem per bad field. A getter
/// returns nil both for an absent field and a bad one; `finish` throws if any was bad.
private struct SupportBodyReader {
    private let object: [String: JSONValue]
    private var known: Set<String> = []
    private var problems: [FieldProblem] = []

    init(_ body: some Collection<UInt8>) throws(EventParseError) {
        guard String(validating: body, as: UTF8.self) != nil else { throw .malformed("the body is not valid UTF-8") }
        let document: JSONValue
        do {
            document = try JSONValue.parse(body)
        } catch {
            throw .malformed("the body is not valid JSON")
        }
        guard let object = document.objectValue else {
            throw .malformed("the body must be a JSON object, not \(document.typeName)")
        }
        self.object = object
    }

    /// `reason`; when required, nil only when a problem was recorded.
    mutating func reason(required: Bool = true) -> String? {
        known.insert("reason")
        guard let value = object["reason"], value != .null else {
            if required {
                problems.append(.init(field: "reason", reason: "is required: a support action needs a reason for the audit log"))
            }
            return nil
        }
        guard let text = value.stringValue else {
            problems.append(.init(field: "reason", reason: "must be a string, not \(value.typeName)"))
            return nil
        }
        if let problem = SupportReason.problem(text) {
            problems.append(.init(field: "reason", reason: problem))
            return nil
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    mutating func string(_ name: String, check: (String) -> String?) -> String? {
        known.insert(name)
        switch object[name] {
        case nil, .null?: return nil
        case .string(let text)?:
            if let problem = TextRules.containsNUL(text) ? TextRules.nulReason : check(text) {
                problems.append(.init(field: name, reason: problem))
                return nil
            }
            return text
        case let other?:
            problems.append(.init(field: name, reason: "must be a string, not \(other.typeName)"))
            return nil
        }
    }

    mutating func stringArray(_ name: String, allowEmpty: Bool, check: (String) -> String? = { _ in nil }) -> [String]? {
        known.insert(name)
        switch object[name] {
        case nil, .null?: return nil
        case .array(let values)?:
            var strings: [String] = []
            for value in values {
                guard let text = value.stringValue, !text.isEmpty else {
                    problems.append(.init(field: name, reason: "must be an array of non-empty strings"))
                    return nil
                }
                if let problem = TextRules.containsNUL(text) ? TextRules.nulReason : check(text) {
                    problems.append(.init(field: name, reason: problem))
                    return nil
                }
                if !strings.contains(text) { strings.append(text) }
            }
            if strings.isEmpty && !allowEmpty {
                problems.append(.init(field: name, reason: "must name at least one, or be left out"))
                return nil
            }
            return strings
        case let other?:
            problems.append(.init(field: name, reason: "must be an array, not \(other.typeName)"))
            return nil
        }
    }

    /// A time; when required, nil only when a problem was recorded.
    mutating func time(_ name: String, required: Bool = false) -> Date? {
        if required, object[name] == nil || object[name] == .null {
            known.insert(name)
            problems.append(.init(field: name, reason: "is required: an RFC 3339 date-time such as 2026-01-31T12:00:00Z"))
            return nil
        }
        return string(name) { text in
            guard let date = RFC3339.parse(text) else { return "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z" }
            return TextRules.isInStoredRange(date) ? nil : TextRules.timeRangeReason
        }.flatMap(RFC3339.parse)
    }

    mutating func integer(_ name: String, in range: ClosedRange<Int>) -> Int? {
        known.insert(name)
        switch object[name] {
        case nil, .null?: return nil
        case .integer(let value)? where range.contains(Int(clamping: value)): return Int(value)
        case let other?:
            problems.append(.init(field: name, reason: "must be a whole number from \(range.lowerBound) to \(range.upperBound)"
                                  + (other.typeName == "a number" ? "" : ", not \(other.typeName)")))
            return nil
        }
    }

    mutating func problem(_ field: String, _ reason: String) {
        known.insert(field)
        problems.append(.init(field: field, reason: reason))
    }

    func hasProblem(_ field: String) -> Bool { problems.contains { $0.field == field } }
    var hasAnyProblem: Bool { !problems.isEmpty }

    mutating func bool(_ name: String) -> Bool? {
        known.insert(name)
        switch object[name] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        case let other?:
            problems.append(.init(field: name, reason: "must be true or false, not \(other.typeName)"))
            return nil
        }
    }

    /// Exactly one of `echo` and `oauth2`, with the same rules as on ingest. Reasons never
    /// quote a credential.
    mutating func proof(missingProof: VerificationPath) -> VerificationProof? {
        known.insert("oauth2")
        guard let oauth2 = object["oauth2"], oauth2 != .null else {
            if missingProof == .oauth2, (object["echo"] ?? .null) == .null {
                known.insert("echo")
                problems.append(.init(field: "oauth2", reason: "is required"))
                return nil
            }
            return echo().map(VerificationProof.echo)
        }
        if let echo = object["echo"], echo != .null {
            known.insert("echo")
            problems.append(.init(field: "oauth2", reason: EventFieldRules.bothProofsReason))
            return nil
        }
        guard case .object(let fields) = oauth2 else {
            problems.append(.init(field: "oauth2", reason: "must be an object, not \(oauth2.typeName)"))
            return nil
        }
        return requiredString("oauth2.access_token", fields["access_token"], check: EventFieldRules.accessTokenProblem)
            .map { .oauth2(OAuth2Credentials(accessToken: Secret($0))) }
    }

    /// `echo`, required, with the same rules as on ingest. Reasons never quote the header.
    mutating func echo() -> EchoCredentials? {
        known.insert("echo")
        guard case .object(let echo)? = object["echo"] else {
            let reason = object["echo"].map { $0 == .null ? "is required" : "must be an object, not \($0.typeName)" } ?? "is required"
            problems.append(.init(field: "echo", reason: reason))
            return nil
        }
        let serviceProvider = requiredString("echo.service_provider", echo["service_provider"]) { url in
            TextRules.containsNUL(url) ? TextRules.nulReason : EventFieldRules.serviceProviderProblem(url)
        }
        let authorization = requiredString("echo.authorization", echo["authorization"], check: EventFieldRules.authorizationProblem)
        guard let serviceProvider, let authorization else { return nil }
        return EchoCredentials(serviceProvider: serviceProvider, authorization: Secret(authorization))
    }

    /// A required string that passes `check` (which returns the reason it fails, or nil).
    private mutating func requiredString(_ field: String, _ value: JSONValue?, check: (String) -> String?) -> String? {
        switch value {
        case .string(let text)?:
            if let problem = check(text) {
                problems.append(.init(field: field, reason: problem))
                return nil
            }
            return text
        case nil, .null?: problems.append(.init(field: field, reason: "is required"))
        case let other?: problems.append(.init(field: field, reason: "must be a string, not \(other.typeName)"))
        }
        return nil
    }

    mutating func checkRange(since: Date?, until: Date?) {
        if let since, let until, since >= until {
            problems.append(.init(field: "until", reason: "must be later than since"))
        }
    }

    /// Throws the collected problems, and one for each field this body does not have.
    func finish() throws(EventParseError) {
        var all = problems
        for name in object.keys.sorted() where !known.contains(name) {
            all.append(.init(field: name, reason: "is not a field of this request; the fields are \(known.sorted().joined(separator: ", "))"))
        }
        if !all.isEmpty { throw .invalidFields(all) }
    }
}
