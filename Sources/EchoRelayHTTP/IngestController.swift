import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// `POST /v1/events`: the identity provider's front door. The answer is `202` only once
/// the event and its verification work item are committed; a refused request stores nothing.
struct IngestController<Context: RequestContext>: Sendable {
    /// Stores the event and its work item; answers once they are committed.
    let storeEvent: @Sendable (IncomingEvent) async throws -> IngestReceipt
    let ingestSecrets: [WebhookSecret]
    let now: @Sendable () -> Date
    let metrics: RelayMetrics
    /// Refuses new events while the backlog is past its limit; nil: no limit.
    let backlog: BacklogLimit?
    /// The proofs this relay can have confirmed; another is refused before anything is stored.
    let acceptedProofs: AcceptedProofs
    /// Told of each new event, with whether it was handed to this process's verify worker.
    let workCreated: @Sendable (_ handedOff: Bool) -> Void
    let summary = IngestSummary()

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
        } catch let refusal as BacklogRefusal {
            metrics.eventReceived(type: type, result: .overloaded)
            throw refusal.problem
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
            try body.withUnsafeReadableBytes { bytes in
                Result { () throws(WebhookVerificationError) in
                    try StandardWebhooks.verify(
                        id: request.headers[.webhookID],
                        timestamp: request.headers[.webhookTimestamp],
                        signatures: request.headers[values: .webhookSignature].joined(separator: " "),
                        body: bytes, secrets: ingestSecrets, now: now()
                    )
                }
            }.get()
        } catch {
            context.logger.notice("ingest signature refused", metadata: ["reason": "\(error)"])
            throw Problem(.unauthorized, slug: "invalid-signature", title: "Invalid webhook signature",
                          detail: error.description)
        }
        // After the signature, so only the provider learns of the backlog; before reading the
        // event, so a refusal costs no parsing and no database round trip.
        if let retryAfter = backlog?.admit() {
            throw BacklogRefusal(problem: .backlogFull(retryAfter: retryAfter))
        }
        guard MediaType.isJSON(request.headers[.contentType]) else {
            throw Problem(.unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported media type",
                          detail: "the body must be sent as Content-Type: application/json")
        }

        let event: IncomingEvent
        do throws(EventParseError) {
            event = try body.withUnsafeReadableBytes { (bytes) throws(EventParseError) in 
                try IncomingEvent.parse(body: bytes, missingProof: acceptedProofs.missingProof)
            }
        } catch .malformed(let reason) {
            throw Problem(.badRequest, slug: "malformed-body", title: "Malformed body", detail: reason)
        } catch .invalidFields(let problems) {
            throw Problem(.unprocessableContent, slug: "invalid-event", title: "Invalid event", fields: problems)
        }
        if let problem = acceptedProofs.problem(event.path, type: event.type) {
            throw Problem(.unprocessableContent, slug: "invalid-event", title: "Invalid event", fields: [problem])
        }

        type = event.type
        let receipt: IngestReceipt
        do {
            // The store answers within its own limit (503 past it), so no timer runs here.
            receipt = try await storeEvent(event)
        } catch IngestError.conflict {
            context.logger.notice("ingest conflict: same id, different body", metadata: ["event.id": "\(event.id)", "user.id": "\(event.userID)"])
            throw Problem(
                .conflict, slug: "event-id-conflict", title: "Conflicting event id",
                detail: "an event with id \"\(event.id)\" was already received with a different body"
            )
        }
        if !receipt.isDuplicate { workCreated(receipt.handedOff) }
        // One line per event only at debug: at info, `summary` reports the counts now and then.
        context.logger.debug(receipt.isDuplicate ? "event received again" : "event accepted", metadata: [
            "event.id": "\(event.id)", "user.id": "\(event.userID)",
            "event.sequence": "\(receipt.sequence)", "event.type": "\(event.type.rawValue)",
        ])
        summary.count(duplicate: receipt.isDuplicate, logger: context.logger)
        return (Self.acknowledgement(receipt), receipt.isDuplicate)
    }

    /// `202 {"id":…,"sequence":…,"status":"accepted"}` (`API.IngestAcknowledgement`), written
    /// directly: an event id is `[A-Za-z0-9._:-]` (checked at parsing), so nothing in it needs
    /// escaping.
    static func acknowledgement(_ receipt: IngestReceipt) -> Response {
        var body = ByteBuffer()
        body.reserveCapacity(64 + receipt.id.utf8.count)
        body.writeStaticString(#"{"id":""#)
        body.writeString(receipt.id)
        body.writeStaticString(#"","sequence":"#)
        body.writeString(String(receipt.sequence))
        body.writeStaticString(#","status":"accepted"}"#)
        return Response(status: .accepted, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
    }
}

/// A 503 for the backlog, told apart from the store's own 503s for the metrics.
private struct BacklogRefusal: Error {
    let problem: Problem
}

extension HTTPField.Name {
    static let webhookID = Self("webhook-id")!
    static let webhookTimestamp = Self("webhook-timestamp")!
    static let webhookSignature = Self("webhook-signature")!
}
