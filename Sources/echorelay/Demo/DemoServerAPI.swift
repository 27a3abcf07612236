import AsyncHTTPClient
import EchoRelayAPI
import EchoRelayCore
import EchoRelayServer
import Foundation
import NIOCore
import NIOHTTP1

/// What the demo asks of the EchoRelay server: the admin API (subscriptions, timelines,
/// events) through the support verbs' `APIClient`, and ingest signed with the ingest secret,
/// as the identity provider sends it. Neither the token nor a secret is part of any message.
struct DemoServerAPI: Sendable {
    let api: APIClient
    private let ingestSecret: WebhookSecret

    init(baseURL: String, token: String, ingestSecret: WebhookSecret, http: HTTPClient) {
        self.api = APIClient(baseURL: baseURL, token: token, http: http)
        self.ingestSecret = ingestSecret
    }

    var baseURL: String { api.baseURL }

    // MARK: Subscriptions

    func createSubscription(url: String) async throws(ClientError) -> API.Subscription {
        let request = API.SubscriptionInput(
            url: url, event_types: EventType.allCases.map(\.rawValue),
            description: "echorelay demo (deleted when the demo ends)"
        )
        do {
            return try await api.post(["v1", "subscriptions"], body: request).decode(API.Subscription.self)
        } catch {
            var error = error
            switch error.status {
            case nil:
                error.hint = "start the server first, in another terminal, with `echorelay serve --demo`, and point ECHORELAY_URL / --url at it"
            case 401?:
                error.hint = "the admin token was refused: use the ECHORELAY_TOKEN=er_… that `echorelay serve` printed on its first run, or the server's ECHORELAY_ADMIN_TOKEN"
            case 422?:
                error.message = "the server refused the demo's subscriber \(url): \(error.message)"
                error.hint = "the server delivers to loopback over plain http only in demo mode: start it with `echorelay serve --demo`, then run echorelay demo again"
            case 403?:
                error.hint = "echorelay demo needs a token with the admin role: the ECHORELAY_TOKEN=er_… that `echorelay serve` printed on its first run, or one made with: echorelay tokens create --role admin --name demo"
            default:
                break
            }
            throw error
        }
    }

    /// Deletes the subscription; one that is already gone is fine.
    func deleteSubscription(id: String) async throws(ClientError) {
        do {
            _ = try await api.delete(["v1", "subscriptions", id])
        } catch where error.status == 404 {}
    }

    // MARK: Ingest

    /// `POST /v1/events`, signed with the Standard Webhooks headers under the ingest secret.
    func push(_ event: DemoEventBody) async throws(ClientError) -> API.IngestAcknowledgement {
        let body: Data
        do {
            body = try canonicalJSON(event)
        } catch {
            // Not the error itself: an encoding error can quote a value, and the event holds echo credentials.
            throw ClientError("could not encode the event as JSON (\(type(of: error)))")
        }
        let messageID = "msg_" + UUID().uuidString.lowercased()
        let timestamp = Int64(Date().timeIntervalSince1970)
        var request = HTTPClientRequest(url: api.url(["v1", "events"]))
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "echorelay-demo/\(EchoRelayInfo.version)")
        request.headers.add(name: StandardWebhooks.idHeader, value: messageID)
        request.headers.add(name: StandardWebhooks.timestampHeader, value: String(timestamp))
        request.headers.add(name: StandardWebhooks.signatureHeader, value: StandardWebhooks.signatureHeaderValue(
            id: messageID, timestamp: timestamp, body: body, secrets: [ingestSecret]
        ))
        request.body = .bytes(ByteBuffer(bytes: body))

        let answer: APIAnswer
        do {
            answer = try await api.execute(request)  // no bearer token: ingest is signed instead
        } catch {
            var error = error
            switch error.status {
            case nil:
                error.hint = "start the server first with `echorelay serve --demo`, and point ECHORELAY_URL / --url at it"
            case 401?:
                error.message = "the server refused the demo's signed event (401): the ingest secret is not one of the server's"
                error.hint = "pass the secret the server was started with (ECHORELAY_INGEST_SECRETS / --ingest-secret), or, for the embedded store, the ECHORELAY_INGEST_SECRETS=whsec_… line that `echorelay serve` printed on its first run"
                error.fieldErrors = []
            case 422? where event.oauth2 != nil:
                error.hint = "the server confirms OAuth 2 events only with an authorization server configured: start it with `echorelay serve --demo` (which uses the demo's stand-in on \(DemoDefaults.providerHostAndPort)), or run the demo with --provider echo"
            default:
                break
            }
            throw error
        }
        return try answer.decode(API.IngestAcknowledgement.self)
    }

    // MARK: Reading what the server decided

    /// The user's events, newest first (a demo user has only a few).
    func timeline(userID: String) async throws(ClientError) -> [API.TimelineEvent] {
        try await api.get(["v1", "users", userID, "events"], query: [("limit", "100")]).decode(API.Timeline.self).items
    }

    func event(id: String) async throws(ClientError) -> API.Event {
        try await api.get(["v1", "events", id]).decode(API.Event.self)
    }

    func user(id: String) async throws(ClientError) -> API.User {
        try await api.get(["v1", "users", id]).decode(API.User.self)
    }
}

/// The body of `POST /v1/events`, as the identity provider pushes it.
struct DemoEventBody: Encodable, Sendable {
    let id: String
    let type: String
    let user_id: String
    let occurred_at: String
    let data: [String: String]
    /// The event's one proof; the other is left out.
    let echo: API.EchoCredentials?
    let oauth2: API.OAuth2Credentials?
}
