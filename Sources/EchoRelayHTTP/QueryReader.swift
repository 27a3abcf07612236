import EchoRelayCore
import Foundation
import Hummingbird

/// Reads the query parameters of a list request, collecting a problem per bad one; `finish`
/// throws them all as one `400 invalid-query`.
struct QueryReader {
    private let parameters: Parameters
    private var problems: [FieldProblem] = []
    /// A console form sends its empty fields: there an empty value means no filter.
    private let emptyIsAbsent: Bool

    init(_ request: Request, emptyIsAbsent: Bool = false) {
        self.parameters = request.uri.queryParameters
        self.emptyIsAbsent = emptyIsAbsent
    }

    private func get(_ name: String) -> String? {
        guard let text = parameters.get(name), !(emptyIsAbsent && text.isEmpty) else { return nil }
        return text
    }

    /// A non-empty text value.
    mutating func string(_ name: String) -> String? {
        guard let text = get(name) else { return nil }
        guard !text.isEmpty else {
            problems.append(.init(field: name, reason: "must not be empty"))
            return nil
        }
        guard !TextRules.containsNUL(text) else {
            problems.append(.init(field: name, reason: TextRules.nulReason))
            return nil
        }
        return text
    }

    /// A list given as `name=a,b` or `name=a&name=b`, each value read by `parse`.
    mutating func list<Value>(_ name: String, expected: String, _ parse: (String) -> Value?) -> [Value]? {
        let texts = parameters.getAll(name).flatMap { $0.split(separator: ",").map(String.init) }
            .filter { !(emptyIsAbsent && $0.isEmpty) }
        guard !texts.isEmpty else { return nil }
        var values: [Value] = []
        for text in texts {
            guard let value = parse(text) else {
                problems.append(.init(field: name, reason: "must be \(expected), got \"\(text.prefix(40))\""))
                return nil
            }
            values.append(value)
        }
        return values
    }

    /// One value read by `parse`.
    mutating func one<Value>(_ name: String, expected: String, _ parse: (String) -> Value?) -> Value? {
        guard let text = string(name) else { return nil }
        guard let value = parse(text) else {
            problems.append(.init(field: name, reason: "must be \(expected), got \"\(text.prefix(40))\""))
            return nil
        }
        return value
    }

    mutating func time(_ name: String) -> Date? {
        guard let text = string(name) else { return nil }
        guard let date = RFC3339.parse(text) else {
            problems.append(.init(field: name, reason: "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z"))
            return nil
        }
        guard TextRules.isInStoredRange(date) else {
            problems.append(.init(field: name, reason: TextRules.timeRangeReason))
            return nil
        }
        return date
    }

    /// `limit`: 1 to 100, default 50.
    mutating func limit() -> Int {
        guard let text = get("limit") else { return 50 }
        guard let number = Int(text), (1...100).contains(number) else {
            problems.append(.init(field: "limit", reason: "must be a whole number from 1 to 100"))
            return 50
        }
        return number
    }

    /// `cursor`: the `next_cursor` of the previous page, a positive whole number.
    mutating func cursor() -> Int64? {
        guard let text = get("cursor") else { return nil }
        guard let number = Int64(text), number > 0 else {
            problems.append(.init(field: "cursor", reason: "is not a cursor this server gave"))
            return nil
        }
        return number
    }

    /// A cursor of another form than a number, read by `parse`.
    mutating func cursor<Cursor>(_ name: String, _ parse: (String) -> Cursor?) -> Cursor? {
        guard let text = get(name) else { return nil }
        guard let cursor = parse(text) else {
            problems.append(.init(field: name, reason: "is not a cursor this server gave"))
            return nil
        }
        return cursor
    }

    /// The filters and cursor of a list of every user's events (`GET /v1/events`, the
    /// console's Recent events).
    mutating func recentEvents() -> RecentEventsQuery {
        var query = RecentEventsQuery()
        query.types = list("type", expected: "an event type (\(EventType.allCases.map(\.rawValue).joined(separator: ", ")))",
                           EventType.init(rawValue:))
        query.statuses = list("status", expected: "an event status (\(EventStatus.allCases.map(\.rawValue).joined(separator: ", ")))",
                              EventStatus.init(rawValue:))
        query.reasons = list("reason", expected: "a reason code such as unknown_token or provider_unavailable",
                             VerificationReason.init(rawValue:))
        query.subscriptionID = string("subscription_id")
        query.since = time("since")
        query.until = time("until")
        checkRange(since: query.since, until: query.until)
        query.before = cursor("cursor", RecentEventsCursor.init(text:))
        return query
    }

    mutating func checkRange(since: Date?, until: Date?) {
        if let since, let until, since >= until {
            problems.append(.init(field: "until", reason: "must be later than since"))
        }
    }

    func finish() throws {
        guard problems.isEmpty else {
            throw Problem(.badRequest, slug: "invalid-query", title: "Invalid query", fields: problems)
        }
    }

    /// Reads `limit` (the last parameter), `finish`es, and fetches that page of `rows`.
    mutating func page<Row>(_ rows: (Int) async throws -> [Row]) async throws -> PageCut<Row> {
        let limit = limit()
        try finish()
        return try await PageCut.fetch(limit: limit, rows)
    }
}

/// Reads a support action's JSON body (at most 64 KiB) with `parse`, turning its errors into
/// `400 malformed-body` or `422 invalid-request` naming every bad field.
func supportBody<Body>(_ request: Request, _ parse: ([UInt8]) throws(EventParseError) -> Body) async throws -> Body {
    let buffer = try await request.body.collect(upTo: EchoRelayRequestContext.maxBodySize)  // already read and capped by RequestBodyMiddleware
    do throws(EventParseError) {
        return try parse(Array(buffer.readableBytesView))
    } catch .malformed(let reason) {
        throw Problem(.badRequest, slug: "malformed-body", title: "Malformed body", detail: reason)
    } catch .invalidFields(let problems) {
        throw Problem(.unprocessableContent, slug: "invalid-request", title: "Invalid request", fields: problems)
    }
}

extension Parameters {
    /// A path parameter, percent-decoded: the router matches the raw path, so a user id with
    /// a `/` or a non-ASCII letter arrives as `%2F` or `%C3%A9`.
    func decoded(_ name: String) throws -> String {
        let raw = try require(name)
        guard let text = raw.removingPercentEncoding else {
            throw Problem(.badRequest, slug: "invalid-path", title: "Invalid path",
                          detail: "the \(name) in the path has a malformed percent-encoding")
        }
        guard !TextRules.containsNUL(text) else {
            throw Problem(.badRequest, slug: "invalid-path", title: "Invalid path", detail: "the \(name) in the path \(TextRules.nulReason)")
        }
        return text
    }
}
