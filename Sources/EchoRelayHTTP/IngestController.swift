import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// `POST /v1/events`: the identity provider's front door. The answer is `202` only once
/// the event and its verification work item are committed; a refused request stores nothing.
struct IngestController<Context: RequestContext>: Sendable {
    let store: any EventStore
    let ingestSecrets: [WebhookSecret]
    let now: @Sendable () -> Date
    let metrics: RelayMetrics
    let workCreated: @Sendable () -> Void

    func addRoutes(to router: Router<Context>) {
        router.post("/v1/events", use: ingest)
    }

    /// Counts every request by its event type (once read) and what became of it.
    @Sendable func ingest(_ request: Request, context: Context) async throws -> Response {
        var type: EventType?
        do {
            let (response, duplicate) = try await accept(request, context: context, type: &type)
            metrics.eventReceived(type: type, result: duplicate ? .duplicate : .accepted)
            return response
        } catch let problem as Problem where problem.status == .conflict {
            metrics.eventReceived(type: type, result: .conflict)
            throw problem
        } catch let problem as Problem where (400..<500).contains(problem.status.code) {
            metrics.eventReceived(type: type, result: .refused)
            throw problem
        } catch {
            metrics.eventReceived(type: type, result: .failed)
            throw error
        }
    }

    /// The answer, and whether the event had been received before.
    private func accept(_ request: Request, context: Context, type: inout EventType?) async throws -> (Response, Bool) {
        let body = try await request.body.collect(upTo: context.maxUploadSize)  // already read and capped by RequestBodyMiddleware
        do throws(WebhookVerificationError) {
            try StandardWebhooks.verify(
                id: request.headers[values: .webhookID].first,
                timestamp: request.headers[values: .webhookTimestamp].first,
                signatures: request.headers[values: .webhookSignature].joined(separator: " "),
                body: body.readableBytesView, secrets: ingestSecrets, now: now()
            )
        } catch {
            context.logger.notice("ingest signature refused", metadata: ["reason": "\(error)"])
            throw Problem(.unauthorized, slug: "invalid-signature", title: "Invalid webhook signature",
                          detail: error.description)
        }
        try requireJSONContentType(request)

        let event: IncomingEvent
        do throws(EventParseError) {
            event = try body.withUnsafeReadableBytes { (bytes) throws(EventParseError) in try IncomingEvent.parse(body: bytes) }
        } catch .malformed(let reason) {
            throw Problem(.badRequest, slug: "malformed-body", title: "Malformed body", detail: reason)
        } catch .invalidFields(let problems) {
            throw Problem(
                .unprocessableContent, slug: "invalid-event", title: "Invalid event",
                detail: problems.map(\.description).joined(separator: "; "), errors: problems
            )
        }

        type = event.type
        var logger = context.logger
        logger[metadataKey: "event.id"] = "\(event.id)"
        logger[metadataKey: "user.id"] = "\(event.userID)"
        let receipt: IngestReceipt
        do {
            // A database that does not answer is an outage (503), never a hung provider. If the
            // commit landed just before the limit, the provider's retry gets the same receipt.
            receipt = try await withTimeout(.seconds(10)) { [store] in try await store.ingest(event) }
        } catch IngestError.conflict {
            logger.notice("ingest conflict: same id, different body")
            throw Problem(
                .conflict, slug: "event-id-conflict", title: "Conflicting event id",
                detail: "an event with id \"\(event.id)\" was already received with a different body"
            )
        }
        if !receipt.isDuplicate { workCreated() }
        logger.info(receipt.isDuplicate ? "event received again" : "event accepted",
                    metadata: ["event.sequence": "\(receipt.sequence)", "event.type": "\(event.type.rawValue)"])
        let response = try JSONResponse.make(
            status: .accepted,
            IngestAcknowledgement(id: receipt.id, sequence: receipt.sequence, status: "accepted")
        )
        return (response, receipt.isDuplicate)
    }

    private func requireJSONContentType(_ request: Request) throws(Problem) {
        let value = request.headers[.contentType] ?? ""
        let parameters = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let charsetIsUTF8 = parameters.dropFirst().allSatisfy { !$0.hasPrefix("charset=") || $0 == "charset=utf-8" || $0 == "charset=\"utf-8\"" }
        guard parameters.first == "application/json", charsetIsUTF8 else {
            throw Problem(.unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported media type",
                          detail: "the body must be sent as Content-Type: application/json")
        }
    }
}

struct IngestAcknowledgement: Encodable {
    let id: String
    let sequence: Int64
    let status: String
}

extension HTTPField.Name {
    static let webhookID = Self("webhook-id")!
    static let webhookTimestamp = Self("webhook-timestamp")!
    static let webhookSignature = Self("webhook-signature")!
}
