import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// The demo's stand-in app backend: `POST /hooks` checks the Standard Webhooks signature
/// with the subscription's secret, as a subscriber must, and records every delivery —
/// `webhook-id`, type, user, sequence, replay marker — so the demo can hold them against
/// the server's own record. A delivery whose signature does not match is answered `401`.
final class DemoSubscriber: Sendable {
    static let path = "/hooks"
    static let bodyLimit = 1 << 20

    /// One delivery as it arrived.
    struct Received: Sendable {
        let webhookID: String
        let eventID: String?
        let type: String?
        let userID: String?
        let sequence: Int64?
        /// The `replay` member of the signed body: a deliberate resend by support staff.
        let replayID: String?
        let phoneNumber: String?
        /// Nil when the signature matched; otherwise why it did not.
        let signatureProblem: String?

        var signatureValid: Bool { signatureProblem == nil }
    }

    private struct State {
        var secret: WebhookSecret?
        var received: [Received] = []
    }

    let port: Int
    private let output: DemoOutput
    private let state = Mutex(State())

    init(port: Int, output: DemoOutput) {
        self.port = port
        self.output = output
    }

    var url: String { "http://127.0.0.1:\(port)\(Self.path)" }

    /// The subscription's secret, from the answer that created it.
    func setSecret(_ secret: WebhookSecret) {
        state.withLock { $0.secret = secret }
    }

    var received: [Received] { state.withLock { $0.received } }

    func received(webhookID: String) -> [Received] {
        received.filter { $0.webhookID == webhookID }
    }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post(RouterPath(Self.path)) { request, _ in await self.answer(request) }
        return router
    }

    private func answer(_ request: Request) async -> Response {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.bodyLimit)
        } catch {
            return DemoJSON.response(.contentTooLarge, ["error": .string("body too large")])
        }
        let bytes = Array(body.readableBytesView)
        let id = request.headers[HTTPField.Name("webhook-id")!]
        let signatures = request.headers[values: HTTPField.Name("webhook-signature")!].joined(separator: " ")
        let secret = state.withLock { $0.secret }
        var problem: String?
        if let secret {
            do {
                try StandardWebhooks.verify(
                    id: id, timestamp: request.headers[HTTPField.Name("webhook-timestamp")!], signatures: signatures,
                    body: bytes, secrets: [secret], now: Date()
                )
            } catch {
                problem = error.description
            }
        } else {
            problem = "no subscription secret yet"
        }

        let object = (try? JSONValue.parse(bytes))?.objectValue ?? [:]
        let data = object["data"]?.objectValue ?? [:]
        let replay = object["replay"]?.objectValue
        var sequence: Int64?
        if case .integer(let number)? = object["sequence"] { sequence = number }
        let received = Received(
            webhookID: id ?? "", eventID: object["event_id"]?.stringValue, type: object["type"]?.stringValue,
            userID: object["user_id"]?.stringValue, sequence: sequence, replayID: replay?["id"]?.stringValue,
            phoneNumber: data["phone_number"]?.stringValue, signatureProblem: problem
        )
        state.withLock { $0.received.append(received) }

        let what = "\(received.type ?? "?") #\(sequence.map(String.init) ?? "?") for \(received.userID ?? "?")"
            + (received.replayID != nil ? " (replay)" : "")
        guard problem == nil else {
            output.live("subscriber", "POST /hooks \(what), webhook-id \(received.webhookID) → 401: \(problem!)")
            return DemoJSON.response(.unauthorized, ["error": .string("invalid signature")])
        }
        output.live("subscriber", "POST /hooks \(what), webhook-id \(received.webhookID) → 200 (signature valid)")
        return DemoJSON.response(.ok, ["ok": .bool(true)])
    }
}
