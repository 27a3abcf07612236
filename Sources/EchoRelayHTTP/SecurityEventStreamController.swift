import EchoRelayAPI
import EchoRelayCore
import EchoRelaySharedSignals
import Foundation
import Hummingbird
import Logging

/// `/v1/sets/stream` (admin): the stream EchoRelay registers with its Shared Signals
/// transmitter (SSF 1.0 §8.1), shared by `echorelay sets stream` and the console. Each
/// operation calls the transmitter's endpoint, found in its metadata, then keeps what it
/// answered; a transmitter's failure is a `502` problem that says which call failed and why.
struct SecurityEventStreamController<Context: RequestContext>: Sendable {
    let store: any EchoRelayStore
    /// Nil: Shared Signals is not configured, and every route says so.
    let transmitter: TransmitterClient?
    let pushToken: Secret?
    let authorizer: BearerAuthorizer
    let metrics: RelayMetrics

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/sets/stream", use: show)
        router.post("/v1/sets/stream", use: create)
        router.patch("/v1/sets/stream", use: update)
        router.get("/v1/sets/stream/status", use: status)
        router.post("/v1/sets/stream/status", use: setStatus)
        router.post("/v1/sets/stream/verify", use: verify)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        _ = try await authorizer.require(request, roles: [.admin])
        _ = try configured()
        return try JSONResponse.make(API.SecurityEventStream(try await registered()))
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let principal = try await authorizer.require(request, roles: [.admin])
        let transmitter = try configured()
        let body = try await supportBody(request) { (bytes) throws(EventParseError) in try StreamCreateRequest.parse(bytes) }
        let configuration = try await calling { () throws(TransmitterError) in
            try await transmitter.createStream(
                delivery: body.delivery, endpointURL: body.endpointURL, authorization: body.delivery == .push ? pushToken : nil,
                eventsRequested: SecurityEventMapping.eventsRequested, description: body.description ?? "EchoRelay"
            )
        }
        guard let fields = configuration.objectValue, let streamID = fields["stream_id"]?.stringValue, !streamID.isEmpty else {
            throw Self.transmitterFailed("the transmitter's answer to the stream's creation has no stream_id")
        }
        let endpoint = fields["delivery"]?.objectValue?["endpoint_url"]?.stringValue
        guard let endpointURL = body.delivery == .push ? body.endpointURL : endpoint else {
            throw Self.transmitterFailed("the transmitter created a poll stream but gave no delivery.endpoint_url to poll")
        }
        let stream = SecurityEventStream(streamID: streamID, delivery: body.delivery, endpointURL: endpointURL,
                                         configuration: Self.text(configuration), status: .enabled)
        try await store.saveSecurityEventStream(stream)
        metrics.securityEventStreamStatus(stream.status?.rawValue)
        await audit(principal, "set_stream.create", streamID, context)
        return try JSONResponse.make(status: .created, API.SecurityEventStream(stream))
    }

    @Sendable func update(_ request: Request, context: Context) async throws -> Response {
        let principal = try await authorizer.require(request, roles: [.admin])
        let transmitter = try configured()
        var stream = try await registered()
        let body = try await supportBody(request) { (bytes) throws(EventParseError) in try StreamUpdateRequest.parse(bytes) }
        var changes: [String: JSONValue] = [:]
        if let events = body.eventsRequested { changes["events_requested"] = .array(events.map(JSONValue.string)) }
        if let description = body.description { changes["description"] = .string(description) }
        if let url = body.endpointURL {
            guard stream.delivery == .push else {
                throw Problem(.unprocessableContent, slug: "invalid-request", title: "Invalid request",
                              fields: [FieldProblem(field: "endpoint_url", reason: "is for push only: this stream is polled")])
            }
            var delivery: [String: JSONValue] = ["method": .string(stream.delivery.method), "endpoint_url": .string(url)]
            if let pushToken { delivery["authorization_header"] = .string("Bearer " + pushToken.revealed) }
            changes["delivery"] = .object(delivery)
        }
        let id = stream.streamID
        let configuration = try await calling { () throws(TransmitterError) in try await transmitter.updateStream(id: id, changes: changes) }
        stream.configuration = Self.text(configuration)
        if let url = body.endpointURL { stream.endpointURL = url }
        try await store.saveSecurityEventStream(stream)
        await audit(principal, "set_stream.update", id, context)
        return try JSONResponse.make(API.SecurityEventStream(stream))
    }

    /// Asks the transmitter for the stream's status, and keeps it.
    @Sendable func status(_ request: Request, context: Context) async throws -> Response {
        _ = try await authorizer.require(request, roles: [.admin])
        let transmitter = try configured()
        var stream = try await registered()
        let id = stream.streamID
        let answer = try await calling { () throws(TransmitterError) in try await transmitter.status(id: id) }
        try await keep(answer, in: &stream)
        return try JSONResponse.make(API.SecurityEventStream(stream))
    }

    @Sendable func setStatus(_ request: Request, context: Context) async throws -> Response {
        let principal = try await authorizer.require(request, roles: [.admin])
        let transmitter = try configured()
        var stream = try await registered()
        let body = try await supportBody(request) { (bytes) throws(EventParseError) in try StreamStatusRequest.parse(bytes) }
        let id = stream.streamID
        let answer = try await calling { () throws(TransmitterError) in
            try await transmitter.setStatus(id: id, status: body.status, reason: body.reason)
        }
        try await keep(answer, in: &stream, asked: body)
        await audit(principal, "set_stream.status", id, context, reason: body.reason)
        return try JSONResponse.make(API.SecurityEventStream(stream))
    }

    /// Asks the transmitter for a verification event with a fresh random `state`, and waits
    /// until one arrives (pushed or polled, in any process) or the time is up.
    @Sendable func verify(_ request: Request, context: Context) async throws -> Response {
        _ = try await authorizer.require(request, roles: [.admin])
        let transmitter = try configured()
        var stream = try await registered()
        let body = try await supportBody(request) { (bytes) throws(EventParseError) in try StreamVerifyRequest.parse(bytes) }
        let state = RandomID.make() + RandomID.make()  // 200 random bits
        let before = try await store.newestSecurityEventNumber()
        let requestedAt = Date()
        let started = ContinuousClock.now
        let id = stream.streamID
        try await calling { () throws(TransmitterError) in try await transmitter.requestVerification(id: id, state: state) }
        var verification = SecurityEventStream.Verification(state: state, requestedAt: requestedAt, outcome: .timedOut, elapsed: nil)
        while ContinuousClock.now - started < body.timeout {
            if let arrived = try await store.verificationEvent(after: before) {
                verification.elapsed = ContinuousClock.now - started
                verification.outcome = switch arrived.state {
                case state: .passed
                case nil: .missingState
                default: .wrongState
                }
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        stream.verification = verification
        try await store.saveSecurityEventStream(stream)
        metrics.securityEventStreamVerification(verification.outcome.rawValue)
        context.logger.notice("Shared Signals stream verified", metadata: [
            "set.stream_id": "\(id)", "set.verification": "\(verification.outcome.rawValue)",
        ])
        return try JSONResponse.make(API.StreamVerification(verification))
    }

    // MARK: Helpers

    /// A change to the stream, in the log and the audit log (`GET /v1/audit`).
    private func audit(_ principal: Principal, _ action: String, _ streamID: String, _ context: Context, reason: String? = nil) async {
        context.logger.notice("\(action)", metadata: ["set.stream_id": "\(streamID)", "actor": "\(principal.name)"])
        do {
            try await store.recordAudit(actor: principal, action: action, target: streamID, filter: nil, matched: nil, reason: reason)
        } catch {
            context.logger.error("writing the audit entry failed", metadata: ["action": "\(action)", "error": "\(error)"])
        }
    }

    private func configured() throws -> TransmitterClient {
        guard let transmitter else {
            throw Problem(.notFound, slug: "not-configured", title: "Not configured",
                          detail: "Shared Signals is not configured: set ECHORELAY_SET_ISSUER and ECHORELAY_SET_AUDIENCE")
        }
        return transmitter
    }

    private func registered() async throws -> SecurityEventStream {
        guard let stream = try await store.securityEventStream() else {
            throw Problem.notFound("no Shared Signals stream is registered; register one with: echorelay sets stream create --delivery push|poll")
        }
        return stream
    }

    /// The status the transmitter answered (SSF 1.0 §8.1.2), kept with the stream.
    private func keep(_ answer: JSONValue, in stream: inout SecurityEventStream, asked: StreamStatusRequest? = nil) async throws {
        let fields = answer.objectValue ?? [:]
        guard let status = fields["status"]?.stringValue.flatMap(SecurityEventStream.Status.init(rawValue:)) ?? asked?.status else {
            throw Self.transmitterFailed("the transmitter's status answer has no status of enabled, paused or disabled")
        }
        stream.status = status
        stream.statusReason = fields["reason"]?.stringValue ?? asked?.reason
        stream.statusCheckedAt = Date()
        try await store.saveSecurityEventStream(stream)
        metrics.securityEventStreamStatus(status.rawValue)
    }

    @discardableResult
    private func calling<T>(_ call: () async throws(TransmitterError) -> T) async throws -> T {
        do throws(TransmitterError) {
            return try await call()
        } catch .configuration(let text) {
            throw Problem(.conflict, slug: "not-configured", title: "Not configured", detail: text)
        } catch .notFound(let text) {
            throw Problem.notFound(text)
        } catch .rejected(let text), .unsupported(let text) {
            throw Problem(.unprocessableContent, slug: "transmitter-refused", title: "The transmitter refused the request", detail: text)
        } catch {
            throw Self.transmitterFailed(error.description)
        }
    }

    static func transmitterFailed(_ detail: String) -> Problem {
        Problem(.badGateway, slug: "transmitter-failed", title: "The transmitter failed", detail: detail)
    }

    /// The transmitter's answer as kept and shown: without an `authorization_header` it may
    /// echo back, which is the push token.
    static func text(_ value: JSONValue) -> String {
        var kept = value
        if case .object(var fields) = value, case .object(var delivery)? = fields["delivery"] {
            delivery["authorization_header"] = nil
            fields["delivery"] = .object(delivery)
            kept = .object(fields)
        }
        return String(decoding: kept.canonicalEncoding(), as: UTF8.self)
    }
}

extension API.SecurityEventStream {
    init(_ stream: SecurityEventStream) {
        let configuration = (try? JSONValue.parse(Array(stream.configuration.utf8))) ?? .object([:])
        let names = { (key: String) in configuration.objectValue?[key]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        self.init(
            stream_id: stream.streamID, delivery: stream.delivery.rawValue, endpoint_url: stream.endpointURL,
            status: stream.status?.rawValue, status_reason: stream.statusReason, status_checked_at: stream.statusCheckedAt.map(RFC3339.format),
            events_requested: names("events_requested"), events_delivered: names("events_delivered"),
            configuration: API.JSON(configuration), verification: stream.verification.map(API.StreamVerification.init),
            created_at: RFC3339.format(stream.createdAt), updated_at: RFC3339.format(stream.updatedAt)
        )
    }
}

extension API.StreamVerification {
    init(_ verification: SecurityEventStream.Verification) {
        self.init(state: verification.state, requested_at: RFC3339.format(verification.requestedAt),
                  outcome: verification.outcome.rawValue, elapsed_ms: SecurityEventStream.milliseconds(verification.elapsed))
    }
}
