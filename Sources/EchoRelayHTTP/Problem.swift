import EchoRelayAPI
import EchoRelayCore
import Foundation
import Hummingbird

/// An RFC 9457 problem answer (`application/problem+json`). Field errors are listed under
/// `errors`, each naming the field and the reason, so a client can fix all of them at once.
public struct Problem: HTTPResponseError, Sendable {
    public var status: HTTPResponse.Status
    /// A short slug; the `type` member is `urn:echorelay:problem:<slug>`.
    public var slug: String
    public var title: String
    public var detail: String?
    public var errors: [FieldProblem]
    public var headers: HTTPFields

    public init(
        _ status: HTTPResponse.Status, slug: String, title: String, detail: String? = nil,
        errors: [FieldProblem] = [], headers: HTTPFields = [:]
    ) {
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.errors = errors
        self.headers = headers
    }

    /// A problem with field errors, its detail naming each of them.
    init(_ status: HTTPResponse.Status, slug: String, title: String, fields: [FieldProblem]) {
        self.init(status, slug: slug, title: title, detail: fields.map(\.description).joined(separator: "; "), errors: fields)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/problem+json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body())))
    }

    func body() -> Data {
        let body = API.Problem(
            type: "urn:echorelay:problem:\(slug)", title: title, status: status.code, detail: detail,
            errors: errors.isEmpty ? nil : errors.map { API.FieldProblem(field: $0.field, reason: $0.reason) }
        )
        return (try? JSONResponse.encoder.encode(body)) ?? Data()
    }
}

extension Problem {
    static func unauthorized(_ detail: String) -> Problem {
        Problem(.unauthorized, slug: "unauthorized", title: "Unauthorized", detail: detail,
                headers: [.wwwAuthenticate: "Bearer"])
    }

    static func notFound(_ detail: String) -> Problem {
        Problem(.notFound, slug: "not-found", title: "Not found", detail: detail)
    }

    static let serviceUnavailable = Problem(
        .serviceUnavailable, slug: "unavailable", title: "Service unavailable",
        detail: "the database is unavailable; nothing was stored, try again", headers: [.retryAfter: "5"]
    )

    /// The backlog is past `ECHORELAY_BACKLOG_LIMIT`: the same type as the other 503s, which a
    /// provider already retries, with the wait estimated from how fast the backlog drains.
    static func backlogFull(retryAfter seconds: Int) -> Problem {
        Problem(
            .serviceUnavailable, slug: "unavailable", title: "Service unavailable",
            detail: "too many events are waiting for verification and delivery; nothing was stored, try again after \(seconds) s",
            headers: [.retryAfter: String(seconds)]
        )
    }

    /// A SET names a key not yet known and the transmitter's keys were fetched too lately to
    /// look again: the transmitter retries a 503, and by then they can be fetched.
    static func keysRefreshing(retryAfter delay: Duration) -> Problem {
        let seconds = max(1, Int((Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18).rounded(.up)))
        return Problem(
            .serviceUnavailable, slug: "unavailable", title: "Service unavailable",
            detail: "the SET names a key this receiver fetches again in a moment; nothing was stored, send it again after \(seconds) s",
            headers: [.retryAfter: String(seconds)]
        )
    }

    /// `ECHORELAY_DURABILITY=standby` and no standby confirmed the commit in time. It is on
    /// the primary and may or may not survive it, so unlike the other 503s this one does not
    /// say that nothing was stored.
    static func standbyUnconfirmed(_ error: StandbyUnconfirmed) -> Problem {
        Problem(
            .serviceUnavailable, slug: "unavailable", title: "Service unavailable",
            detail: "\(error.reason); it is committed on the primary and may not survive its loss. "
                + "Send the same event or SET again after Retry-After (it gets its stored receipt); check a change before you repeat it",
            headers: [.retryAfter: "2"]
        )
    }

    static let internalError = Problem(
        .internalServerError, slug: "internal", title: "Internal error",
        detail: "the request failed on the server; nothing was stored"
    )
}
