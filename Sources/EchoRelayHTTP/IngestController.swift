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
    let workCreated: @Sendable () -> Void

    func addRoutes(to router: Router<Context>) {
        router.post("/v1/events", use: ingest)
    }

    @Sendable func ingest(_ request: Request, context: Context) async throws -> Response {
        let body = try await collectBody(request)
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
            event = try IncomingEvent.parse(body: body.readableBytesView)
        } catch .malformed(let reason) {
            throw Problem(.badRequest, slug: "malformed-body", title: "Malformed body", detail: reason)
        } catch .invalidFields(let problems) {
            throw Problem(
                .unprocessableContent, slug: "invalid-event", title: "Invalid event",
                detail: problems.map(\.description).joined(separator: "; "), errors: problems
            )
        }

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
        return try JSONResponse.make(
            status: .accepted,
            IngestAcknowledgement(id: receipt.id, sequence: receipt.sequence, status: "accepted")
        )
    }

    /// The body, capped at 64 KiB: a declared length over the cap is refused before reading.
    private func collectBody(_ request: Request) async throws -> ByteBuffer {
        let limit = IncomingEvent.maximumBodySize
        let tooLarge = Problem(.contentTooLarge, slug: "body-too-large", title: "Body too large",
                               detail: "the body must be at most \(limit) bytes")
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit { throw tooLarge }
        do {
            return try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw tooLarge
        }
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
