import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The benchmark's identity provider: answers OAuth Echo requests after really checking the
/// HMAC-SHA1 signature, as a provider does. It keeps no state: a user's token is
/// `tok-<user>` and its secret `ts-<user>`, so any user the load generator makes up is known.
enum BenchProvider {
    static let path = "/1.1/account/verify_credentials.json"
    static let consumerKey = "bench-consumer"
    static let consumerSecret = "bench-consumer-secret"

    static func token(of user: String) -> String { "tok-" + user }
    static func tokenSecret(of user: String) -> String { "ts-" + user }
    /// Every user's phone number, so `phone.changed` events verify.
    static func phoneNumber(of user: String) -> String {
        let digits = String(user.unicodeScalars.reduce(UInt64(5381)) { ($0 &* 33) &+ UInt64($1.value) } % 10_000_000)
        return "+1555" + String(repeating: "0", count: 7 - digits.count) + digits
    }

    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get(RouterPath(path)) { request, _ -> Response in
            guard let authorization = request.headers[.authorization],
                  let header = try? OAuthAuthorizationHeader.parse(authorization),
                  header.consumerKey == consumerKey,
                  let token = header.token, token.hasPrefix("tok-") else {
                return json(.unauthorized, #"{"errors":[{"code":32,"message":"Could not authenticate you."}]}"#)
            }
            let user = String(token.dropFirst(4))
            let url = "http://\(request.head.authority ?? "")\(path)"  // as this request reached us: what the client signed
            let signed = (try? OAuth1.isValidSignature(
                of: header, method: "GET", url: url, consumerSecret: consumerSecret, tokenSecret: tokenSecret(of: user)
            )) ?? false
            guard signed else {
                return json(.unauthorized, #"{"errors":[{"code":32,"message":"Could not authenticate you."}]}"#)
            }
            return json(.ok, #"{"id_str":"\#(user)","phone_number":"\#(phoneNumber(of: user))"}"#)
        }
        return router
    }

    private static func json(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}

/// The benchmark's app backends: `POST /hooks/<n>` checks the Standard Webhooks signature
/// with subscription n's secret and reports each delivery to the `Tracker`.
enum BenchSubscriber {
    private struct Delivery: Decodable {
        let event_id: String
        let user_id: String
        let sequence: Int64
    }

    static func router(secrets: @escaping @Sendable () -> [WebhookSecret], tracker: Tracker) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/hooks/{n}") { request, context -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            guard let n = context.parameters.get("n", as: Int.self), secrets().indices.contains(n) else {
                return Response(status: .notFound)
            }
            do {
                try StandardWebhooks.verify(
                    id: request.headers[HTTPField.Name("webhook-id")!],
                    timestamp: request.headers[HTTPField.Name("webhook-timestamp")!],
                    signatures: request.headers[HTTPField.Name("webhook-signature")!],
                    body: body.readableBytesView, secrets: [secrets()[n]], now: Date()
                )
            } catch {
                tracker.badSignature()
                return Response(status: .unauthorized)
            }
            guard let delivery = try? JSONDecoder().decode(Delivery.self, from: Data(body.readableBytesView)) else {
                return Response(status: .badRequest)
            }
            tracker.delivered(eventID: delivery.event_id, subscription: n, user: delivery.user_id, sequence: delivery.sequence)
            return Response(status: .noContent)
        }
        return router
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
