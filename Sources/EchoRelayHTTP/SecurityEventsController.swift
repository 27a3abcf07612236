import EchoRelayAPI
import EchoRelayCore
import EchoRelaySharedSignals
import Foundation
import Hummingbird
import Logging

/// `POST /v1/sets`: Security Event Tokens pushed by an OpenID Shared Signals transmitter
/// (RFC 8935), and `GET /v1/sets`, what support sees of them. A SET is answered `202` only
/// once it is recorded; a refused one (`400 {"err", "description"}`, RFC 8935 §2.3) stores
/// nothing, and its description never quotes the token or a key.
struct SecurityEventsController<Context: RequestContext>: Sendable {
    let store: any EchoRelayStore
    /// Nil: no transmitter is configured, and the push route is not served (404).
    let receiver: SecurityEventReceiver?
    let authorizer: BearerAuthorizer
    let backlog: BacklogLimit?
    let metrics: RelayMetrics
    let workCreated: @Sendable () -> Void

    func addRoutes(to router: Router<Context>) {
        if let receiver {
            router.post("/v1/sets") { request, context in try await push(request, context: context, receiver: receiver) }
        }
        router.get("/v1/sets", use: list)
    }

    func push(_ request: Request, context: Context, receiver: SecurityEventReceiver) async throws -> Response {
        do {
            let result = try await accept(request, context: context, receiver: receiver)
            metrics.securityEventReceived(result)
            return Response(status: .accepted)
        } catch let refusal as Refusal {
            metrics.securityEventReceived(refusal.result)
            return refusal.response
        } catch let problem as Problem where problem.status == .serviceUnavailable {
            metrics.securityEventReceived(.overloaded)
            throw problem
        } catch {
            metrics.securityEventReceived(.failed)
            throw error
        }
    }

    private func accept(_ request: Request, context: Context, receiver: SecurityEventReceiver) async throws -> RelayMetrics.SecurityEventResult {
        guard receiver.isAuthorized(request.headers[.authorization]) else {
            context.logger.notice("SET push refused: no valid push token")
            throw Refusal(status: .unauthorized, code: "authentication_failed",
                          description: "the push must carry Authorization: Bearer with the configured push token", result: .refused)
        }
        guard Self.isSecurityEventToken(request.headers[.contentType]) else {
            throw Refusal(status: .badRequest, code: "invalid_request",
                          description: "the body must be sent as Content-Type: application/secevent+jwt", result: .refused)
        }
        // As for pushed events: the same 503 problem, which a transmitter retries.
        if let retryAfter = backlog?.admit() { throw Problem.backlogFull(retryAfter: retryAfter) }
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        let token = String(decoding: body.readableBytesView, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)

        let received: ReceivedSecurityEvent
        switch await receiver.receive(token) {
        case .failure(let refusal) where refusal.retryAfter != nil:
            // A key the transmitter may have just published: a 503 it retries, not a 400 it drops.
            context.logger.notice("SET not checked yet: the transmitter's keys were fetched a moment ago")
            throw Problem.keysRefreshing(retryAfter: refusal.retryAfter ?? .seconds(1))
        case .failure(let refusal):
            context.logger.notice("SET refused", metadata: ["set.err": "\(refusal.code)", "reason": "\(refusal.description)"])
            throw Refusal(status: .badRequest, code: refusal.code, description: refusal.description, result: .refused)
        case .success(let event):
            received = event
        }
        var logger = context.logger
        logger[metadataKey: "set.jti"] = "\(received.jti)"
        logger[metadataKey: "set.event_type"] = "\(received.eventType)"
        switch try await store.receiveSecurityEvent(received) {
        case .duplicate:
            logger.debug("SET received again; nothing changed")
            return .duplicate
        case .recorded(let disposition, let event):
            if let event {
                workCreated()
                logger.info("SET accepted as an event", metadata: ["event.id": "\(event.id)", "event.sequence": "\(event.sequence)"])
            } else {
                logger.info("SET recorded, nothing to deliver", metadata: ["set.disposition": "\(disposition.rawValue)"])
            }
            return RelayMetrics.SecurityEventResult(rawValue: disposition.rawValue) ?? .event
        }
    }

    /// `application/secevent+jwt`, in any case, with or without parameters.
    static func isSecurityEventToken(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return type.lowercased() == "application/secevent+jwt"
    }

    /// An answer in RFC 8935's error form: `{"err": code, "description": text}` (the other
    /// answers, 413 and 503 among them, are problems as everywhere else).
    struct Refusal: Error {
        let status: HTTPResponse.Status
        let code: String
        let description: String
        let result: RelayMetrics.SecurityEventResult

        var response: Response {
            var headers: HTTPFields = [.contentType: "application/json"]
            if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
            let body = (try? JSONEncoder().encode(API.SetError(err: code, description: description))) ?? Data()
            return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
    }

    /// `GET /v1/sets`: received SETs newest first, for support (`?disposition=`, `?limit=`, `?cursor=`).
    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        _ = try await authorizer.require(request, roles: .staff)
        var reader = QueryReader(request)
        let disposition = reader.list("disposition", expected: "event, verification, ignored or unmatched",
                                      SecurityEventDisposition.init(rawValue:))
        let before = reader.cursor()
        let page = try await reader.page { rows in
            guard (disposition?.count ?? 0) <= 1 else {
                throw Problem(.badRequest, slug: "invalid-query", title: "Invalid query",
                              fields: [FieldProblem(field: "disposition", reason: "give one disposition at most")])
            }
            return try await store.securityEvents(disposition: disposition?.first, before: before, limit: rows)
        }
        return try JSONResponse.make(API.SecurityEventList(page, item: API.SecurityEvent.init) { String($0.number) })
    }
}
