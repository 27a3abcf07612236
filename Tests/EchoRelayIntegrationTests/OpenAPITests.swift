import EchoRelayAPI
import EchoRelayCore
import EchoRelayHTTP
import EchoRelayPostgres
import EchoRelayServer
import EchoRelaySharedSignals
import EchoRelayStandIns
import Foundation
import Hummingbird
import Logging
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// The OpenAPI description (`Sources/EchoRelayHTTP/OpenAPI/openapi.yaml`, served at
/// `GET /openapi.yaml`) held true: it is what the server serves, it is valid OpenAPI 3.1, it
/// names exactly the routes the router has, the answers of a live server to a request of every
/// operation match its schemas, and schemathesis fuzzing every operation finds no server error.
/// The checks are done by code nobody here wrote (openapi-spec-validator, openapi-core,
/// schemathesis) through `scripts/openapi-check`; without Python or its packages
/// (`scripts/python-requirements.txt`) these tests fail and say how to install them.
@Suite struct OpenAPITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized
    static var documentPath: String { root.appendingPathComponent("Sources/EchoRelayHTTP/OpenAPI/openapi.yaml").path }

    // MARK: The document

    @Test func theServedDocumentIsTheFileAndValidOpenAPI31() async throws {
        let file = try Data(contentsOf: URL(fileURLWithPath: Self.documentPath))
        try await LiveServer.run { server in
            let served = try await server.http.get("/openapi.yaml")  // no token
            #expect(served.status == 200)
            #expect(served.headers.first(name: "Content-Type") == "application/yaml")
            #expect(served.body == file, "the binary embeds an old copy: rebuild")
        }
        let document = try Self.describedDocument()
        #expect(document.openapi == "3.1.0")
    }

    @Test func aWorkersOnlyProcessServesNoDescriptionOfAnAPIItDoesNotServe() async throws {
        try await LiveServer.run(role: .workers) { (server: LiveServer) async throws in
            let document = try await server.http.get("/openapi.yaml")
            #expect(document.status == 404)
            let health = try await server.http.get("/healthz")
            #expect(health.status == 200)
        }
    }

    /// Every route the router registers is described, and every described operation is a route.
    /// The support console's pages (`/console`, HTML for browsers, ConsoleTests) are not part of
    /// the API the document describes.
    @Test func everyRouteIsDescribedAndEveryDescribedOperationIsARoute() throws {
        let described = Set(try Self.describedDocument().operations.map { "\($0[0]) \($0[1])" })
        let routes = Set(Self.router(servesAPI: true).routes.filter { !"\($0.path)".hasPrefix("/console") }
            .map { "\($0.method.rawValue) \($0.path)" })
        #expect(routes.subtracting(described).sorted() == [], "routes the document does not describe")
        #expect(described.subtracting(routes).sorted() == [], "described operations the router does not have")
        #expect(routes.count == described.count)

        // A workers-only process serves a subset: the health checks and its metrics.
        let workers = Set(Self.router(servesAPI: false).routes.map { "\($0.method.rawValue) \($0.path)" })
        #expect(workers == ["GET /healthz", "GET /readyz", "GET /metrics"])
    }

    /// The document's event types are the registry's (`EventType.registry`), with what each
    /// descriptor says: a push's `data` required or not, and what a delivery's `data` holds.
    @Test func theDocumentsEventTypesAreTheRegistrys() throws {
        let described = try Self.describedDocument().event_types
        let names = EventType.allCases.map(\.rawValue)
        #expect(described.enum == names)
        #expect(described.webhooks.keys.filter { $0 != "echorelay.test" }.sorted() == names.sorted(),
                "one webhook per type, and the test delivery's")
        #expect(described.webhooks["echorelay.test"] == .init(type: "echorelay.test", data: []))
        for type in EventType.allCases {
            let data = (type.descriptor.deliversPhoneNumber ? ["phone_number", "previous_phone_number"] : [])
                + (type.descriptor.deliversSessionReason ? ["reason"] : [])
            #expect(described.webhooks[type.rawValue] == .init(type: type.rawValue, data: data), "the \(type) webhook")
        }
        #expect(described.data_required == EventType.allCases.filter { $0.descriptor.phoneNumber == .required }.map(\.rawValue))
        #expect(described.data_optional == EventType.allCases.filter { $0.descriptor.phoneNumber == .optional }.map(\.rawValue))
    }

    /// The wire contract (EchoRelayAPI), which the handlers encode and the CLI decodes: each
    /// body, encoded, writes only its schema's properties and every required one, nested
    /// objects included; and each type's coding keys are its schema's properties, both ways.
    @Test func theWireTypesHaveTheirSchemasProperties() throws {
        let shapes = try Self.describedDocument().shapes
        let attempt = API.DeliveryAttempt(started_at: "2026-01-31T12:00:00Z", duration_ms: 3, status_code: 200, error_kind: nil,
                                          error: nil, response_head: "ok")
        let delivery = API.Delivery(subscription_id: "sub_1", replay_id: nil, webhook_id: "msg_1", status: "delivered",
                                    created_at: "2026-01-31T12:00:00Z", finished_at: nil, next_attempt_at: nil, attempts: [attempt])
        let event = API.Event(
            id: "evt_1", type: "token.rotated", user_id: "42", sequence: 1, status: "verified", reason: nil,
            occurred_at: "2026-01-31T12:00:00Z", received_at: "2026-01-31T12:00:00Z", decided_at: nil, verified_at: nil,
            provider: .init(user_id: "42", phone_number: "+15555550100"), source: "set",
            security_event: .init(issuer: "https://idp.example", jti: "j1", event_type: "x"), deliveries: [delivery])
        let counts = API.DeliveryCounts(total: 1, pending: 0, delivered: 1, dead: 0, cancelled: 0, replays: 0)
        let timeline = API.TimelineEvent(
            id: "evt_1", type: "token.rotated", user_id: "42", sequence: 1, status: "pending", reason: nil,
            occurred_at: "2026-01-31T12:00:00Z", received_at: "2026-01-31T12:00:00Z", decided_at: nil, verified_at: nil,
            deliveries: counts)
        let user = API.User(user_id: "42", state: "active", phone_number: nil, last_sequence: 1,
                            last_event_at: "2026-01-31T12:00:00Z", updated_at: "2026-01-31T12:00:00Z")
        let letter = API.DeadLetter(
            event_id: "evt_1", subscription_id: "sub_1", replay_id: "rpl_1", user_id: "42", type: "token.rotated", sequence: 1,
            webhook_id: "msg_1", attempts: 8, received_at: "2026-01-31T12:00:00Z", dead_at: "2026-01-31T12:00:00Z",
            last_status_code: 500, last_error: "status")
        let receipt = API.ReplayReceipt(id: "rpl_1", event_id: "evt_1", matched: 1, subscription_ids: ["sub_1"])
        let token = API.AccessToken(id: "tok_1", name: "Sam", role: "support", created_at: "2026-01-31T12:00:00Z", revoked_at: nil)
        let subscription = API.Subscription(
            id: "sub_1", url: "https://app.example/hook", event_types: ["token.rotated"], description: nil, ordered: true,
            enabled: true, disabled_reason: nil, created_at: "2026-01-31T12:00:00Z", updated_at: "2026-01-31T12:00:00Z",
            last_success_at: nil, failing_since: nil, secret: nil)
        var withSecret = subscription
        withSecret.secret = "whsec_c2VjcmV0"
        let filter = API.JSON.object(["user_id": .string("42"), "types": .array([.string("token.rotated")])])
        let replay = API.Replay(
            id: "rpl_1", kind: "bulk", state: "running", reason: "backend restored", actor: .init(name: "alice", role: "support"),
            event_id: nil, filter: filter, matched: 2, sent: 1, delivered: 1, failed: 0, created_at: "2026-01-31T12:00:00Z",
            finished_at: nil)
        let audit = API.AuditEntry(id: 1, at: "2026-01-31T12:00:00Z", actor: .init(name: "alice", role: "support", token_id: "tok_1"),
                                   action: "replay.start", target: "rpl_1", filter: filter, matched: 2, reason: "restored")
        let set = API.SecurityEvent(
            issuer: "https://idp.example", jti: "j1", event_type: "https://schemas.openid.net/secevent/caep/event-type/credential-change",
            issued_at: "2026-01-31T12:00:00Z", received_at: "2026-01-31T12:00:00Z",
            subject: .object(["format": .string("opaque"), "id": .string("42")]), disposition: "event", note: nil,
            verification_state: nil, event_id: "evt_1")
        let problem = API.Problem(type: "urn:echorelay:problem:invalid-request", title: "Invalid request", status: 422,
                                  detail: "id: is required", errors: [.init(field: "id", reason: "is required")])
        let verification = API.StreamVerification(state: "abc", requested_at: "2026-01-31T12:00:00Z", outcome: "passed", elapsed_ms: 42)
        let bodies: [(String, any Encodable)] = [
            ("Event", event), ("Delivery", delivery), ("DeliveryAttempt", attempt), ("TimelineEvent", timeline), ("User", user),
            ("DeadLetter", letter), ("ReplayReceipt", receipt), ("DeliveryAttemptList", API.DeliveryAttemptList(attempts: [attempt])),
            ("SubscriptionDelivery", API.SubscriptionDelivery(
                id: 7, event_id: "evt_1", user_id: "42", type: "token.rotated", sequence: 1, replay_id: nil, webhook_id: "msg_1",
                status: "pending", attempts: 1, created_at: "2026-01-31T12:00:00Z", finished_at: nil,
                next_attempt_at: "2026-01-31T12:01:00Z", last_status_code: 503)),
            ("Subscription", subscription), ("SubscriptionWithSecret", withSecret), ("Problem", problem),
            ("Replay", replay), ("AuditEntry", audit), ("SecurityEvent", set),
            // What the CLI sends, every optional member set.
            ("ReplayEventRequest", API.ReplayEventRequest(reason: "r", subscription_ids: ["sub_1"])),
            ("BulkReplayRequest", API.BulkReplayRequest(reason: "r", user_id: "42", subscription_id: "sub_1", types: ["token.rotated"],
                                                        since: "2026-01-31T12:00:00Z", until: "2026-01-31T13:00:00Z",
                                                        status: "delivered", dry_run: true)),
            ("RedriveRequest", API.RedriveRequest(reason: "r", subscription_id: "sub_1", since: "2026-01-31T12:00:00Z",
                                                  until: "2026-01-31T13:00:00Z", dry_run: true)),
            ("ReasonRequest", API.ReasonRequest(reason: "r")),
            ("WebhookDelivery", API.WebhookDelivery(
                webhook_id: "msg_1", event: API.DeliveredEvent(id: "evt_1", type: "token.rotated", user_id: "42", sequence: 1,
                                                               status: "verified", reason: nil, occurred_at: "2026-01-31T12:00:00Z",
                                                               received_at: "2026-01-31T12:00:00Z", verified_at: nil),
                subscription_id: "sub_1", subscription: subscription, deliveries: [delivery])),
            ("DeliveredEvent", API.DeliveredEvent(id: "evt_1", type: "token.rotated", user_id: "42", sequence: 1, status: "verified",
                                                  reason: "provider_confirmed", occurred_at: "2026-01-31T12:00:00Z",
                                                  received_at: "2026-01-31T12:00:00Z", verified_at: "2026-01-31T12:00:01Z")),
            ("AccessToken", token),
            ("AccessTokenWithSecret", API.CreatedAccessToken(token, token: "er_x")),
            ("AccessTokenList", API.AccessTokenList(tokens: [token])),
            ("AccessTokenInput", API.AccessTokenInput(role: "support", name: "Sam", reason: "r")),
            ("RecoverRequest", API.RecoverRequest(reason: "r", since: "2026-01-31T12:00:00Z", until: "2026-01-31T13:00:00Z",
                                                  dry_run: true)),
            ("SubscriptionInput", API.SubscriptionInput(url: "https://app.example/hook", event_types: ["token.rotated"],
                                                        description: "billing", ordered: false)),
            ("TestDeliveryResult", API.TestDeliveryResult(webhook_id: "msg_1", delivered: true, attempt: attempt)),
            ("ReverifyRequest", API.ReverifyRequest(reason: "r", echo: .init(service_provider: "https://api.example/v",
                                                                              authorization: "OAuth x"))),
            ("EchoCredentials", API.EchoCredentials(service_provider: "https://api.example/v", authorization: "OAuth x")),
            ("OAuth2Credentials", API.OAuth2Credentials(access_token: "t")),
            ("FieldProblem", API.FieldProblem(field: "id", reason: "is required")),
            // Lists, and the small answers.
            ("SubscriptionList", API.SubscriptionList([subscription], next_cursor: "sub_1")),
            ("SubscriptionDeliveryList", API.SubscriptionDeliveryList([], next_cursor: nil)),
            ("Timeline", API.Timeline([timeline], next_cursor: "1")),
            ("DeadLetterList", API.DeadLetterList([letter], next_cursor: nil)),
            ("SecurityEventList", API.SecurityEventList([set], next_cursor: nil)),
            ("AuditList", API.AuditList([audit], next_cursor: "1")),
            ("IngestAcknowledgement", API.IngestAcknowledgement(id: "evt_1", sequence: 1)),
            ("DryRunCount", API.DryRunCount(matched: 3)),
            ("RedriveCount", API.DryRunCount(matched: 3, dry_run: false)),
            ("ReverifyAccepted", API.ReverifyAccepted(id: "evt_1")),
            ("Health", API.Health(status: "ok")),
            ("NotReady", API.NotReady(reason: "the database is not reachable")),
            ("SetError", API.SetError(err: "invalid_key", description: "no key with that kid")),
            ("SecurityEventStream", API.SecurityEventStream(
                stream_id: "s-1", delivery: "poll", endpoint_url: "https://idp.example/poll", status: "enabled", status_reason: "r",
                status_checked_at: "2026-01-31T12:00:00Z", events_requested: ["x"], events_delivered: ["x"],
                configuration: .object(["stream_id": .string("s-1")]), verification: verification,
                created_at: "2026-01-31T12:00:00Z", updated_at: "2026-01-31T12:00:00Z")),
            ("StreamVerification", verification),
            ("StreamCreateRequest", API.StreamCreateRequest(delivery: "push", endpoint_url: "https://relay.example/v1/sets", description: "d")),
            ("StreamUpdateRequest", API.StreamUpdateRequest(events_requested: ["x"], description: "d", endpoint_url: "https://relay.example/v1/sets")),
            ("StreamStatusRequest", API.StreamStatusRequest(status: "paused", reason: "r")),
            ("StreamVerifyRequest", API.StreamVerifyRequest(timeout_seconds: 10)),
        ]
        for (schema, body) in bodies {
            let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(body), options: [.fragmentsAllowed])
            Self.check(json, against: Shape(ref: schema, properties: nil, required: nil), in: shapes, at: schema)
        }

        // Both ways: the members each type's conformance writes, set or not, are exactly its
        // schema's properties. Types described inside another schema are named by the path.
        let inner: [(String, any Encodable)] = [
            ("Event.provider", API.ProviderValues(user_id: nil, phone_number: nil)),
            ("Event.security_event", API.SecurityEventOrigin(issuer: "https://idp.example", jti: "j1", event_type: "x")),
            ("TimelineEvent.deliveries", counts), ("Replay.actor", replay.actor), ("AuditEntry.actor", audit.actor),
        ]
        // API.Subscription is both `Subscription` and `SubscriptionWithSecret` (the secret is
        // written once, at creation): its keys are the latter's.
        for (schema, body) in bodies + inner where schema != "Subscription" {
            let described = Set(Self.shape(at: schema, in: shapes)?.properties?.keys ?? [:].keys)
            let written = try CodingKeyRecorder.keys(of: body)
            #expect(written == described, """
                \(schema): written, not described: \(written.subtracting(described).sorted()); \
                described, not written: \(described.subtracting(written).sorted())
                """)
        }
        // Every wire type is among them, so that a new one cannot go unchecked.
        let checked = Set((bodies + inner).map { String(describing: type(of: $0.1)) })
        #expect(try Self.wireTypeNames().subtracting(checked).sorted() == [], "wire types this test has no sample of")
    }

    /// The shape at `Schema` or `Schema.member` (a type described inside another schema).
    static func shape(at path: String, in shapes: [String: Shape]) -> Shape? {
        let parts = path.split(separator: ".").map(String.init)
        var shape = shapes[parts[0]]
        for member in parts.dropFirst() {
            shape = shape?.properties?[member]
            if let ref = shape?.ref { shape = shapes[ref] }
        }
        return shape
    }

    /// The names of the structs EchoRelayAPI declares as wire types.
    static func wireTypeNames() throws -> Set<String> {
        let folder = root.appendingPathComponent("Sources/EchoRelayAPI")
        var names: Set<String> = []
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /public struct (\w+): Codable/) { names.insert(String(match.1)) }
        }
        return names
    }

    static func check(_ json: Any, against shape: Shape, in shapes: [String: Shape], at path: String) {
        if let ref = shape.ref {
            guard let target = shapes[ref] else { return }  // not an object: a string, a time, an enum
            return check(json, against: target, in: shapes, at: path)
        }
        guard let properties = shape.properties else { return }
        if let items = json as? [Any] {
            for (index, item) in items.enumerated() { check(item, against: shape, in: shapes, at: "\(path)[\(index)]") }
            return
        }
        guard let object = json as? [String: Any] else {
            Issue.record("\(path) is not an object")
            return
        }
        let written = Set(object.keys), described = Set(properties.keys), required = Set(shape.required ?? [])
        #expect(written.isSubset(of: described), "\(path): written, not described: \(written.subtracting(described).sorted())")
        #expect(required.isSubset(of: written), "\(path): required, not written: \(required.subtracting(written).sorted())")
        for (key, value) in object where !(value is NSNull) {
            if let member = properties[key] { check(value, against: member, in: shapes, at: "\(path).\(key)") }
        }
    }

    /// The router of a process, built exactly as `serve` builds it; nothing connects to the
    /// database (the client never runs), since only the route table is read.
    static func router(servesAPI: Bool) -> Router<EchoRelayRequestContext> {
        let client = PostgresClient(configuration: .init(host: "127.0.0.1", port: 1, username: "nobody", password: nil,
                                                         database: nil, tls: .disable))
        let store = PostgresEventStore(client: client, logger: TestLogger.quiet)
        let transmitter = SecurityEventReceiverSettings(issuer: "https://idp.example/", audience: "echorelay",
                                                        jwksURL: "https://idp.example/jwks")
        return buildRouter(servesAPI: servesAPI, HTTPDependencies(
            store: store, subscriberURLPolicy: SubscriberURLPolicy(allowPrivate: false), ingestSecrets: [],
            authorizer: BearerAuthorizer(adminToken: nil, tokens: nil),
            securityEvents: SecurityEventReceiver(settings: transmitter, keys: TransmitterKeys { [] }),
            sendTestDelivery: { _, _ in TestDelivery(webhookID: TestDelivery.newWebhookID(), attempt: DeliveryAttempt(
                startedAt: Date(), duration: .zero, statusCode: nil, errorKind: .other, error: "not sent", responseHead: nil)) }
        ))
    }

    // MARK: Live answers against the schemas

    @Test func aLiveServersAnswersToEveryOperationMatchTheSchemas() async throws {
        let delivery = DeliveryConfiguration(timeout: .seconds(5), retrySchedule: [.milliseconds(100)], allowPrivateSubscribers: true)
        try await SharedSignalsTests.withJWKS { transmitter, _, material in
            try await EchoFixture.run(retrySchedule: [.milliseconds(100)], delivery: delivery, securityEvents: transmitter) { f in
                try await StandInSubscriber().run { subscriber in
                    let log = try await Self.exerciseEveryOperation(f, subscriber, sets: material.tokens)
                    // The stream operations call a transmitter: one on loopback, found from its issuer.
                    let streams = try await Self.exerciseStreamOperations()
                    let exchanges = log.exchanges + streams.exchanges
                    let results = try Self.validate(exchanges)
                    try #require(results.count == exchanges.count)
                    for (exchange, result) in zip(exchanges, results) {
                        #expect(result.errors.isEmpty, """
                            \(exchange.method) \(exchange.path) answered \(exchange.status) \
                            \(String(decoding: Data(base64Encoded: exchange.body) ?? Data(), as: UTF8.self).prefix(600)):
                            \(result.errors.joined(separator: "\n"))
                            """)
                    }

                    // Every described operation was exercised and answered with success at least once.
                    let succeeded = Set(zip(exchanges, results).compactMap { exchange, result -> String? in
                        guard (200..<300).contains(exchange.status), let operation = result.operation else { return nil }
                        return operation.joined(separator: " ")
                    })
                    let described = Set(try Self.describedDocument().operations.map { $0.joined(separator: " ") })
                    #expect(described.subtracting(succeeded).sorted() == [], "operations with no successful exchange")
                }
            }
        }
    }

    @Test func readinessAnswersMatchTheSchemaWhenNotReady() async throws {
        try await LiveServer.run(migrate: false) { server in
            let log = ExchangeLog(http: server.http)
            #expect(try await log.send(.GET, "/readyz").status == 503)
            #expect(try await log.send(.GET, "/healthz").status == 200)
            let results = try Self.validate(log.exchanges)
            #expect(results.map(\.errors) == [[], []])
        }
    }

    /// The stream operations of `/v1/sets/stream`, each answered with success and with a usual
    /// refusal, by a server whose transmitter is the loopback one.
    static func exerciseStreamOperations() async throws -> ExchangeLog {
        let transmitter = try await SSFTransmitter(token: SharedSignalsPollTests.token)
        let box = LogBox()
        try await EchoFixture.run(securityEvents: SharedSignalsPollTests.settings(transmitter, pollURL: nil)) { f in
            let log = ExchangeLog(http: f.server.http)
            box.log = log
            try await streamOperations(f, log)
        }
        return try #require(box.log)
    }

    static func streamOperations(_ f: EchoFixture, _ log: ExchangeLog) async throws {
        let admin = LiveServer.adminToken
        #expect(try await log.send(.GET, "/v1/sets/stream", token: admin).status == 404)
        #expect(try await log.send(.POST, "/v1/sets/stream", token: admin, validate: false, json: ["delivery": "mail"]).status == 422)
        #expect(try await log.send(.POST, "/v1/sets/stream", token: admin, json: ["delivery": "poll"]).status == 201)
        #expect(try await log.send(.POST, "/v1/sets/stream", token: admin, json: [
            "delivery": "push", "endpoint_url": f.server.http.baseURL + "/v1/sets", "description": "OpenAPI test",
        ]).status == 201)
        #expect(try await log.send(.GET, "/v1/sets/stream", token: admin).status == 200)
        #expect(try await log.send(.PATCH, "/v1/sets/stream", token: admin, json: ["description": "changed"]).status == 200)
        #expect(try await log.send(.PATCH, "/v1/sets/stream", token: admin, validate: false, json: [:]).status == 422)
        #expect(try await log.send(.GET, "/v1/sets/stream/status", token: admin).status == 200)
        #expect(try await log.send(.POST, "/v1/sets/stream/status", token: admin, json: ["status": "paused", "reason": "r"]).status == 200)
        #expect(try await log.send(.POST, "/v1/sets/stream/status", token: admin, validate: false, json: ["status": "off"]).status == 422)
        #expect(try await log.send(.POST, "/v1/sets/stream/verify", token: admin, json: ["timeout_seconds": 10]).status == 200)
        #expect(try await log.send(.POST, "/v1/sets/stream/verify", validate: false).status == 401)
    }

    final class LogBox: @unchecked Sendable {
        // @unchecked: set once inside the fixture, read after it.
        var log: ExchangeLog?
    }

    /// A request of every operation, answered with success and with its usual refusals,
    /// through the full pipeline: verification by the stand-in provider, deliveries to the
    /// stand-in subscriber (one of them dead-lettered), replays, redrive, audit.
    static func exerciseEveryOperation(_ f: EchoFixture, _ subscriber: StandInSubscriber, sets: [String: String]) async throws -> ExchangeLog {
        let log = ExchangeLog(http: f.server.http)
        let admin = LiveServer.adminToken
        let support = try await SubscriptionsAPITests.token("support", "Sam from support", f.server)

        // Operations.
        #expect(try await log.send(.GET, "/healthz").status == 200)
        #expect(try await log.send(.GET, "/readyz").status == 200)
        #expect(try await log.send(.GET, "/metrics").status == 200)
        #expect(try await log.send(.GET, "/openapi.yaml").status == 200)
        #expect(try await log.send(.GET, "/").status == 200)

        // Tokens.
        let issued = try #require(try await log.send(.POST, "/v1/tokens", token: admin,
                                                     json: ["role": "app", "name": "OpenAPI app", "reason": "test"]).json)
        let issuedID = try #require(issued["id"] as? String)
        #expect(try await log.send(.GET, "/v1/tokens", token: admin).status == 200)
        #expect(try await log.send(.POST, "/v1/tokens", token: admin, validate: false, json: ["role": "root", "name": ""]).status == 422)
        #expect(try await log.send(.POST, "/v1/tokens/\(issuedID)/revoke", token: admin, json: ["reason": "done"]).status == 200)
        #expect(try await log.send(.POST, "/v1/tokens/tok_none/revoke", token: admin).status == 404)
        #expect(try await log.send(.GET, "/v1/tokens", token: support).status == 403)

        // Subscriptions: one that takes everything, one that answers 410 Gone (dead letter).
        let main = try #require(try await log.send(.POST, "/v1/subscriptions", token: admin, json: [
            "url": subscriber.url(), "event_types": ["token.rotated", "phone.changed", "account.deactivated"],
            "description": "OpenAPI test",
        ]).json)
        subscriber.setSecrets([try #require(main["secret"] as? String)])
        subscriber.script([.status(410, body: "gone")], forPath: "/gone")
        let gone = try #require(try await log.send(.POST, "/v1/subscriptions", token: admin, json: [
            "url": subscriber.url("/gone"), "event_types": ["phone.changed"], "ordered": false,
        ]).json)
        let mainID = try #require(main["id"] as? String)
        let goneID = try #require(gone["id"] as? String)
        #expect(try await log.send(.POST, "/v1/subscriptions", token: admin, validate: false,
                                   json: ["url": "ftp://example.com", "event_types": []]).status == 422)
        #expect(try await log.send(.POST, "/v1/subscriptions", token: admin, validate: false, raw: Array("[1".utf8)).status == 400)
        #expect(try await log.send(.GET, "/v1/subscriptions", token: support, validate: false).status == 403)
        #expect(try await log.send(.GET, "/v1/subscriptions", validate: false).status == 401)
        let firstPage = try #require(try await log.send(.GET, "/v1/subscriptions?limit=1", token: admin).json)
        let cursor = try #require(firstPage["next_cursor"] as? String)
        #expect(try await log.send(.GET, "/v1/subscriptions?limit=1&cursor=\(Self.query(cursor))", token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/subscriptions?limit=0", token: admin, validate: false).status == 400)

        // A third subscription through its whole life.
        let other = try #require(try await log.send(.POST, "/v1/subscriptions", token: admin, json: [
            "url": subscriber.url("/other"), "event_types": ["account.deactivated"],
        ]).json)
        let otherID = try #require(other["id"] as? String)
        #expect(try await log.send(.GET, "/v1/subscriptions/\(otherID)", token: admin).status == 200)
        #expect(try await log.send(.PATCH, "/v1/subscriptions/\(otherID)", token: admin,
                                   json: ["description": NSNull(), "ordered": false]).status == 200)
        #expect(try await log.send(.PATCH, "/v1/subscriptions/\(otherID)", token: admin, validate: false,
                                   json: ["event_types": ["nope"]]).status == 422)
        #expect(try await log.send(.POST, "/v1/subscriptions/\(otherID)/disable", token: admin).status == 200)
        #expect(try await log.send(.POST, "/v1/subscriptions/\(otherID)/enable", token: admin).status == 200)
        #expect(try await log.send(.POST, "/v1/subscriptions/\(otherID)/rotate-secret", token: admin).status == 200)
        #expect(try await log.send(.DELETE, "/v1/subscriptions/\(otherID)", token: admin).status == 204)
        #expect(try await log.send(.GET, "/v1/subscriptions/\(otherID)", token: admin).status == 404)
        #expect(try await log.send(.POST, "/v1/subscriptions/\(otherID)/enable", token: admin).status == 404)

        // Ingest: verified events, a forged deactivation, an unverifiable event, refusals.
        let userID = "u-openapi"
        let session = try f.session(userID, phone: "+15555550100")
        let rotated = eventBody(type: "token.rotated", userID: userID) {
            $0["echo"] = try? f.echo(token: session.token, tokenSecret: session.secret)
        }
        let rotatedID = try Self.id(of: rotated)
        #expect(try await log.ingest(rotated).status == 202)
        #expect(try await log.ingest(rotated).status == 202, "the same event again")
        let conflicting = eventBody(id: rotatedID, type: "token.rotated", userID: "someone-else")
        #expect(try await log.ingest(conflicting, validate: false).status == 409)
        let changed = eventBody(type: "phone.changed", userID: userID, phone: "+15555550100") {
            $0["echo"] = try? f.echo(token: session.token, tokenSecret: session.secret)
        }
        let changedID = try Self.id(of: changed)
        #expect(try await log.ingest(changed).status == 202)
        let forged = eventBody(type: "account.deactivated", userID: userID) {
            $0["echo"] = try? f.echo(token: "made-up-token", tokenSecret: "made-up-secret")
        }
        let forgedID = try Self.id(of: forged)
        #expect(try await log.ingest(forged).status == 202)
        #expect(try await log.ingest(eventBody(type: "nope"), validate: false).status == 422)
        #expect(try await log.ingest(Array("[]".utf8), validate: false).status == 400)
        #expect(try await log.ingest(eventBody(), contentType: "text/plain", validate: false).status == 415)
        #expect(try await log.ingest([UInt8](repeating: 0x20, count: 70 * 1024), validate: false).status == 413)
        #expect(try await log.send(.POST, "/v1/events", validate: false, raw: eventBody()).status == 401)

        for id in [rotatedID, changedID, forgedID] { _ = try await f.outcome(of: id) }
        _ = try await f.finalDeliveries(of: changedID, count: 2)  // delivered to one, dead at the other
        _ = try await f.finalDeliveries(of: rotatedID, count: 1)

        let unverifiableSession = try f.session("u-openapi-2")
        f.provider.failNext(2)  // the first try and its one retry
        let unverifiable = eventBody(type: "token.rotated", userID: "u-openapi-2") {
            $0["echo"] = try? f.echo(token: unverifiableSession.token, tokenSecret: unverifiableSession.secret)
        }
        let unverifiableID = try Self.id(of: unverifiable)
        #expect(try await log.ingest(unverifiable).status == 202)
        #expect(try await f.outcome(of: unverifiableID)["status"] as? String == "unverifiable")

        // Shared Signals: SETs recorded, one an event; refusals in RFC 8935's form.
        let jwt = [("Content-Type", "application/secevent+jwt")]
        for name in ["verification", "credential-change", "session-revoked"] {
            #expect(try await log.send(.POST, "/v1/sets", raw: Array(try #require(sets[name]).utf8), headers: jwt).status == 202)
        }
        #expect(try await log.send(.POST, "/v1/sets", raw: Array(try #require(sets["verification"]).utf8), headers: jwt).status == 202,
                "the same SET again")
        #expect(try await log.send(.POST, "/v1/sets", validate: false, raw: Array(try #require(sets["wrong-audience"]).utf8),
                                   headers: jwt).status == 400)
        #expect(try await log.send(.POST, "/v1/sets", validate: false, raw: Array("not a token".utf8), headers: jwt).status == 400)
        #expect(try await log.send(.POST, "/v1/sets", validate: false, raw: Array(try #require(sets["verification"]).utf8),
                                   headers: [("Content-Type", "application/jwt")]).status == 400)
        let received = try #require(try await log.send(.GET, "/v1/sets?limit=1", token: support).json)
        let setCursor = try #require(received["next_cursor"] as? String)
        #expect(try await log.send(.GET, "/v1/sets?limit=1&cursor=\(setCursor)", token: admin).status == 200)
        let setEvent = try #require(try await log.send(.GET, "/v1/sets?disposition=event", token: admin).json)
        let setEventID = try #require((setEvent["security_events"] as? [[String: Any]])?.first?["event_id"] as? String)
        #expect(try await f.outcome(of: setEventID)["reason"] as? String == "set_signature")
        #expect(try await log.send(.GET, "/v1/events/\(Self.query(setEventID))", token: support).status == 200)
        #expect(try await log.send(.GET, "/v1/sets?disposition=lost", token: admin, validate: false).status == 400)
        #expect(try await log.send(.GET, "/v1/sets", validate: false).status == 401)

        // Events and users.
        #expect(try await log.send(.GET, "/v1/events/\(changedID)", token: support).status == 200)
        #expect(try await log.send(.GET, "/v1/events/\(forgedID)", token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/events/\(unverifiableID)", token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/events/evt_nope", token: admin).status == 404)
        #expect(try await log.send(.GET, "/v1/events/\(changedID)", validate: false).status == 401)
        #expect(try await log.send(.GET, "/v1/events/\(changedID)", token: "er_not-a-real-token", validate: false).status == 401)
        #expect(try await log.send(.GET, "/v1/users/\(userID)", token: support).status == 200)
        #expect(try await log.send(.GET, "/v1/users/nobody-at-all", token: admin).status == 404)
        #expect(try await log.send(.GET, "/v1/users/\(userID)/events", token: admin).status == 200)
        let timeline = try #require(try await log.send(.GET, "/v1/users/\(userID)/events?limit=1", token: admin).json)
        let timelineCursor = try #require(timeline["next_cursor"] as? String)
        #expect(try await log.send(.GET, "/v1/users/\(userID)/events?limit=1&cursor=\(timelineCursor)", token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/users/\(userID)/events?type=token.rotated,phone.changed&status=verified&since=2020-01-01T00:00:00Z",
                                   token: support).status == 200)
        #expect(try await log.send(.GET, "/v1/users/\(userID)/events?since=yesterday", token: admin, validate: false).status == 400)
        // Every user's events.
        let recent = try #require(try await log.send(.GET, "/v1/events?limit=1", token: support).json)
        let recentCursor = try #require(recent["next_cursor"] as? String)
        #expect(try await log.send(.GET, "/v1/events?limit=1&cursor=\(recentCursor)", token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/events?type=token.rotated&status=verified&reason=provider_confirmed&since=2020-01-01T00:00:00Z",
                                   token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/events?reason=lost", token: admin, validate: false).status == 400)

        // Replays of one event, re-verification.
        let replayed = try #require(try await log.send(.POST, "/v1/events/\(rotatedID)/replay", token: support,
                                                       json: ["reason": "ticket 1: backend lost it"]).json)
        let eventReplayID = try #require(replayed["id"] as? String)
        #expect(try await log.send(.POST, "/v1/events/\(changedID)/replay", token: admin,
                                   json: ["reason": "ticket 2", "subscription_ids": [goneID]]).status == 202)
        #expect(try await log.send(.POST, "/v1/events/\(changedID)/replay", token: admin,
                                   json: ["reason": "ticket 3", "subscription_ids": ["sub_nope"]]).status == 422)
        #expect(try await log.send(.POST, "/v1/events/\(forgedID)/replay", token: admin, json: ["reason": "ticket 4"]).status == 409)
        #expect(try await log.send(.POST, "/v1/events/evt_nope/replay", token: admin, json: ["reason": "ticket 5"]).status == 404)
        #expect(try await log.send(.POST, "/v1/events/\(rotatedID)/replay", token: admin, validate: false, json: [:]).status == 422)
        #expect(try await log.send(.POST, "/v1/events/\(rotatedID)/replay", token: admin, validate: false,
                                   json: ["reason": "r", "subscriptions": [mainID]]).status == 422)
        #expect(try await log.send(.POST, "/v1/events/\(rotatedID)/replay", token: admin, validate: false, raw: Array("{".utf8)).status == 400)
        #expect(try await log.send(.POST, "/v1/events/\(rotatedID)/replay", token: admin, validate: false,
                                   json: ["reason": String(repeating: "x", count: 70 * 1024)]).status == 413)
        let fresh = try f.echo(token: unverifiableSession.token, tokenSecret: unverifiableSession.secret)
        #expect(try await log.send(.POST, "/v1/events/\(unverifiableID)/reverify", token: support,
                                   json: ["reason": "provider is back", "echo": fresh]).status == 202)
        #expect(try await log.send(.POST, "/v1/events/\(changedID)/reverify", token: admin,
                                   json: ["reason": "again", "echo": fresh]).status == 409)
        #expect(try await log.send(.POST, "/v1/events/\(changedID)/reverify", token: admin, validate: false,
                                   json: ["reason": "again", "echo": ["service_provider": "nope"]]).status == 422)
        #expect(try await log.send(.GET, "/v1/replays/\(eventReplayID)", token: admin).status == 200)

        // Bulk replays.
        let dryRun = try await log.send(.POST, "/v1/replays", token: support,
                                        json: ["reason": "count", "user_id": userID, "dry_run": true])
        #expect(dryRun.status == 200)
        let bulk = try #require(try await log.send(.POST, "/v1/replays", token: support, json: [
            "reason": "ticket 6", "user_id": userID, "types": ["token.rotated", "phone.changed"],
            "since": "2020-01-01T00:00:00Z", "status": "delivered",
        ]).json)
        let bulkID = try #require(bulk["id"] as? String)
        #expect(try await log.send(.GET, "/v1/replays/\(bulkID)", token: support).status == 200)
        #expect(try await log.send(.GET, "/v1/replays/rpl_nope", token: support).status == 404)
        // A replay to the disabled subscription waits until it is enabled: still running, so it can be cancelled.
        let waiting = try #require(try await log.send(.POST, "/v1/replays", token: support, json: [
            "reason": "ticket 7", "subscription_id": goneID, "status": "dead",
        ]).json)
        let waitingID = try #require(waiting["id"] as? String)
        #expect(try await log.send(.POST, "/v1/replays/\(waitingID)/cancel", token: support, json: ["reason": "wrong one"]).status == 200)
        #expect(try await log.send(.POST, "/v1/replays/\(waitingID)/cancel", token: support, json: ["reason": "again"]).status == 409)
        #expect(try await log.send(.POST, "/v1/replays/rpl_nope/cancel", token: support, json: ["reason": "r"]).status == 404)
        #expect(try await log.send(.POST, "/v1/replays/\(bulkID)/cancel", token: support, validate: false, json: ["reason": " "]).status == 422)
        #expect(try await log.send(.POST, "/v1/replays", token: support, validate: false, json: ["reason": "r", "user": userID]).status == 422)
        #expect(try await log.send(.POST, "/v1/replays", token: support, validate: false, raw: Array("null".utf8)).status == 400)
        #expect(try await log.send(.POST, "/v1/replays", token: "er_not-a-real-token", validate: false, json: ["reason": "r"]).status == 401)

        // Dead letters.
        let letters = try #require(try await log.send(.GET, "/v1/dead-letters", token: support).json)
        #expect((letters["dead_letters"] as? [Any])?.isEmpty == false)
        #expect(try await log.send(.GET, "/v1/dead-letters?subscription_id=\(goneID)&since=2020-01-01T00:00:00Z&limit=1",
                                   token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/dead-letters?limit=101", token: admin, validate: false).status == 400)
        #expect(try await log.send(.POST, "/v1/dead-letters/redrive", token: support,
                                   json: ["reason": "count", "subscription_id": goneID, "dry_run": true]).status == 200)
        #expect(try await log.send(.POST, "/v1/dead-letters/redrive", token: admin,
                                   json: ["reason": "nothing is dead there", "subscription_id": mainID]).status == 200)
        #expect(try await log.send(.POST, "/v1/dead-letters/redrive", token: admin, validate: false,
                                   json: ["reason": "r", "until": "2020-01-01T00:00:00Z", "since": "2021-01-01T00:00:00Z"]).status == 422)

        // A subscription's own deliveries and their attempts (the 410 answered one is dead).
        let goneDeliveries = try #require(try await log.send(.GET, "/v1/subscriptions/\(goneID)/deliveries?limit=1", token: support).json)
        let goneDelivery = try #require((goneDeliveries["deliveries"] as? [[String: Any]])?.first?["id"] as? Int)
        #expect(try await log.send(.GET, "/v1/subscriptions/\(mainID)/deliveries?status=delivered&type=token.rotated&since=2020-01-01T00:00:00Z",
                                   token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/subscriptions/\(goneID)/deliveries/\(goneDelivery)/attempts", token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/subscriptions/\(goneID)/deliveries?status=sent", token: admin, validate: false).status == 400)
        #expect(try await log.send(.GET, "/v1/subscriptions/\(mainID)/deliveries/\(goneDelivery)/attempts", token: admin).status == 404)
        #expect(try await log.send(.POST, "/v1/subscriptions/\(mainID)/test", token: support).status == 200)
        let goneWebhook = try #require((goneDeliveries["deliveries"] as? [[String: Any]])?.first?["webhook_id"] as? String)
        #expect(try await log.send(.GET, "/v1/deliveries/\(goneWebhook)", token: support).status == 200)
        #expect(try await log.send(.GET, "/v1/deliveries/msg_none", token: admin).status == 404)

        // Recover: one made now has every earlier event to recover, if staff ask for them.
        let window: [String: Any] = ["since": "2020-01-01T00:00:00Z"]
        #expect(try await log.send(.POST, "/v1/subscriptions/\(mainID)/recover", token: support,
                                   json: window.merging(["dry_run": true]) { $1 }).status == 200)
        #expect(try await log.send(.POST, "/v1/subscriptions/\(mainID)/recover", token: support, json: window).status == 422)
        let late = try #require(try await log.send(.POST, "/v1/subscriptions", token: admin, json: [
            "url": subscriber.url("/late"), "event_types": ["token.rotated", "phone.changed"],
        ]).json)
        let recovering = try await log.send(.POST, "/v1/subscriptions/\(try #require(late["id"] as? String))/recover", token: admin,
                                            json: window.merging(["reason": "back up", "before_creation": true]) { $1 })
        #expect(recovering.status == 202, "\(recovering.text)")
        let recover = try #require(recovering.json)
        #expect(try await log.send(.GET, "/v1/replays/\(try #require(recover["id"] as? String))", token: admin).status == 200)
        #expect(try await log.send(.POST, "/v1/subscriptions/\(mainID)/recover", token: support, validate: false,
                                   json: ["until": "2020-01-01T00:00:00Z"]).status == 422)
        #expect(try await log.send(.POST, "/v1/subscriptions/sub_nope/recover", token: support, json: window).status == 404)

        // Audit.
        let audit = try #require(try await log.send(.GET, "/v1/audit?limit=2", token: admin).json)
        let auditCursor = try #require(audit["next_cursor"] as? String)
        #expect(try await log.send(.GET, "/v1/audit?limit=2&cursor=\(auditCursor)", token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/audit?action=replay.start&actor=Sam%20from%20support&target=\(bulkID)", token: admin).status == 200)
        #expect(try await log.send(.GET, "/v1/audit?action=", token: admin, validate: false).status == 400)
        #expect(try await log.send(.GET, "/v1/audit", token: support, validate: false).status == 403)

        // Deleting the dead-lettered subscription last, so its letters were listed first.
        #expect(try await log.send(.DELETE, "/v1/subscriptions/\(goneID)", token: admin).status == 204)
        return log
    }

    static func id(of body: [UInt8]) throws -> String {
        try #require((try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["id"] as? String)
    }

    static func query(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
    }

    // MARK: Fuzzing

    /// schemathesis generates requests for every operation from the document — valid ones and
    /// invalid ones, with an admin token, ingest requests signed over the exact bytes sent —
    /// and checks every answer: never a 5xx, and status, content type, headers and body as
    /// described. Bounded by count, not by time (a few examples per operation, a fixed seed so
    /// a failure can be replayed; `ECHORELAY_FUZZ_SEED` picks another, `ECHORELAY_FUZZ_EXAMPLES`
    /// more examples): a slow or busy machine runs the same requests, only later. The time
    /// limit is a hang guard alone, several times a normal run (three to four minutes on a
    /// 2-core machine; 240 s was once too little on a slower one running a failover test).
    /// Text with NUL bytes is generated too: it once found 500s (see
    /// `textWithANulByteIsRefusedRatherThanAServerError`).
    @Test func schemathesisFindsNoServerErrorAndNoAnswerOutsideTheDocument() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["ECHORELAY_FUZZ_SEED"] ?? "20261123"
        let examples = environment["ECHORELAY_FUZZ_EXAMPLES"] ?? "10"
        let operations = try Self.describedDocument().operations.count
        // A transmitter is configured, so the fuzzing reaches the SET parser (its keys: none it knows).
        let jwks = Router()
        jwks.get("/jwks") { _, _ in #"{"keys":[]}"# }
        try await LoopbackServer.run(jwks) { port in
            let transmitter = SecurityEventReceiverSettings(issuer: "https://idp.example/", audience: "echorelay",
                                                            jwksURL: "http://127.0.0.1:\(port)/jwks", allowHTTP: true)
            // schemathesis' ignored_auth check sends wrong tokens on purpose: at the default
            // limit of failed authentications the rest of the run would be answered 429.
            try await LiveServer.run(securityEvents: transmitter, authenticationFailureLimit: 100_000) { server in
                // The file itself, which the first test holds equal to what the server serves.
                let (status, output, errors) = try await Self.openAPICheck([
                    "fuzz", Self.documentPath, "--url", server.http.baseURL,
                    "--token", LiveServer.adminToken, "--ingest-secret", LiveServer.ingestSecret,
                    "--examples", examples, "--seed", seed,
                    "--phases", "examples,coverage,fuzzing,stateful",
                    "--checks", "all",
                ], timeout: .seconds(900))
                let text = String(decoding: output, as: UTF8.self)
                #expect(status == 0, "schemathesis (seed \(seed)) found problems:\n\(text)\n\(errors)")
                #expect(text.contains("\(operations) selected / \(operations) total"), "every operation is fuzzed:\n\(text)")
            }
        }
    }

    /// Found by the fuzzing above: PostgreSQL refuses text containing U+0000 (SQLite cuts it
    /// there), which answered 500 — for ingest, a 500 the provider retries forever. The same
    /// was true of a bulk replay's `since` in year 0. Every such text is now refused at the
    /// door with a 4xx that names the field.
    @Test func textWithANulByteIsRefusedRatherThanAServerError() async throws {
        try await LiveServer.run { server in
            let admin = [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")]
            var serverErrors: [String] = []
            func probe(_ method: HTTPMethod, _ path: String, _ body: String? = nil) async throws {
                let answer = try await server.http.send(method, path, headers: admin, body: body.map { Array($0.utf8) })
                if answer.status >= 500 { serverErrors.append("\(method) \(path) \(body ?? "") → \(answer.status)") }
            }
            for path in ["/v1/events/%00", "/v1/users/%00", "/v1/users/%00/events", "/v1/replays/%00",
                         "/v1/subscriptions/%00", "/v1/audit?target=%00", "/v1/dead-letters?subscription_id=%00"] {
                try await probe(.GET, path)
            }
            try await probe(.POST, "/v1/replays", #"{"reason": "r", "subscription_id": "\u0000", "dry_run": true}"#)
            try await probe(.POST, "/v1/replays", #"{"reason": "r", "since": "0000-01-01T00:00:00Z", "dry_run": true}"#)
            try await probe(.POST, "/v1/dead-letters/redrive", #"{"reason": "r", "subscription_id": "\u0000", "dry_run": true}"#)
            try await probe(.POST, "/v1/subscriptions",
                            #"{"url": "http://127.0.0.1:9/x", "event_types": ["token.rotated"], "description": "a\u0000b"}"#)
            let ingest = eventBody { $0["echo"] = ["service_provider": "https://api.digits.com/", "authorization": "OAuth \u{0}"] }
            let ingested = try await server.ingest(ingest)
            if ingested.status >= 500 { serverErrors.append("POST /v1/events (echo.authorization with U+0000) → \(ingested.status)") }

            #expect(serverErrors == [])
            #expect(ingested.status == 422)
            #expect(Self.fieldNames(ingested).contains("echo.authorization"))
        }
    }

    static func fieldNames(_ response: TestHTTPResponse) -> [String] {
        (response.json?["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
    }

    // MARK: The webhooks EchoRelay sends

    struct WebhookResult: Decodable {
        let webhook: String?
        let errors: [String]
    }

    /// `openapi-check webhooks` over deliveries: each delivery's headers and body.
    static func validateWebhooks(_ deliveries: [(headers: [String: String], body: Data)]) throws -> [WebhookResult] {
        let input = try JSONSerialization.data(withJSONObject: deliveries.map { ["headers": $0.headers, "body": $0.body.base64EncodedString()] })
        let (status, output, errors) = try runOpenAPICheck(["webhooks", documentPath], input: input)
        guard status == 0 else { throw TestSetupError("scripts/openapi-check webhooks failed (\(status)): \(errors)") }
        return try JSONDecoder().decode([WebhookResult].self, from: output)
    }

    /// A subscriber can generate its types from the document: every delivery of every type,
    /// a replay's included, matches its webhook's body and headers.
    @Test func theWebhooksSectionDescribesRealDeliveriesOfEveryType() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                f.provider.addAccount(userID: "u-hooks", phoneNumber: "+15550002222")
                let session = f.provider.issueToken(for: "u-hooks")
                let echo = try f.echo(token: session.token, tokenSecret: session.secret)
                let rotated = try await f.outcome(of: try await f.push("token.rotated", userID: "u-hooks", echo: echo))
                _ = try await f.outcome(of: try await f.push("phone.changed", userID: "u-hooks", phone: "+15550002222", echo: echo))
                f.provider.expire(token: session.token)
                let deactivated = try await f.outcome(of: try await f.push("account.deactivated", userID: "u-hooks", echo: echo))
                #expect(deactivated["status"] as? String == "verified")
                let replay = try await f.server.http.send(
                    .POST, "/v1/events/\(try #require(rotated["id"] as? String))/replay",
                    headers: [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")],
                    body: Array(#"{"reason": "webhooks check"}"#.utf8)
                )
                #expect(replay.status == 202)
                #expect(try await f.server.http.send(.POST, "/v1/subscriptions/\(try #require(subscription["id"] as? String))/test",
                                                     headers: [("Authorization", "Bearer \(LiveServer.adminToken)")]).status == 200)
                let received = try await subscriber.waitForDeliveries(count: 5, within: .seconds(30))

                let results = try Self.validateWebhooks(received.map { ($0.headers, $0.body) })
                for (delivery, result) in zip(received, results) {
                    #expect(result.errors.isEmpty, "\(delivery.bodyText): \(result.errors)")
                }
                #expect(Set(results.compactMap(\.webhook)) == ["token.rotated", "phone.changed", "account.deactivated", "echorelay.test"])
                #expect(received.contains { $0.object?["replay"] != nil }, "a replay was among them")

                // The check can fail: a body without its user, and a header missing.
                var body = try #require(received.first?.object)
                body["user_id"] = nil
                let broken = try Self.validateWebhooks([(received[0].headers.filter { $0.key != "webhook-id" },
                                                         Data(JSONValue.object(body).canonicalEncoding()))])
                #expect(broken.first?.errors.contains { $0.contains("user_id") } == true, "\(broken)")
                #expect(broken.first?.errors.contains("header webhook-id: missing") == true, "\(broken)")
            }
        }
    }

    // MARK: Running scripts/openapi-check

    struct Document: Decodable {
        let openapi: String
        /// `[METHOD, path template]`.
        let operations: [[String]]
        let event_types: EventTypes
        let shapes: [String: Shape]
    }

    /// A schema as `shapes` in scripts/openapi-check gives it: an object's properties, or a
    /// reference to another component (absent from `shapes` when it is not an object).
    struct Shape: Decodable {
        let ref: String?
        let properties: [String: Shape]?
        let required: [String]?
    }

    /// Where the document names event types (`event_types` in scripts/openapi-check).
    struct EventTypes: Decodable {
        struct Webhook: Decodable, Equatable {
            let type: String?
            let data: [String]
        }
        let `enum`: [String]
        let webhooks: [String: Webhook]
        let data_required: [String]
        let data_optional: [String]
    }

    static func describedDocument() throws -> Document {
        let (status, output, errors) = try runOpenAPICheck(["document", documentPath])
        guard status == 0 else { throw TestSetupError("scripts/openapi-check document failed (\(status)): \(errors)") }
        return try JSONDecoder().decode(Document.self, from: output)
    }

    struct ExchangeResult: Decodable {
        let operation: [String]?
        let errors: [String]
    }

    static func validate(_ exchanges: [Exchange]) throws -> [ExchangeResult] {
        let (status, output, errors) = try runOpenAPICheck(["exchanges", documentPath], input: JSONEncoder().encode(exchanges))
        guard status == 0 else { throw TestSetupError("scripts/openapi-check exchanges failed (\(status)): \(errors)") }
        return try JSONDecoder().decode([ExchangeResult].self, from: output)
    }

    /// Runs `python3 scripts/openapi-check ARGS` to the end without blocking a thread of the
    /// concurrency pool (a live server in this process answers its requests meanwhile).
    static func openAPICheck(_ arguments: [String], input: Data = Data(), timeout: Duration) async throws -> (Int32, Data, String) {
        let run = try pythonCheck(arguments, input: input)
        do {
            try await run.wait(timeout: timeout)
        } catch {
            throw TestSetupError("scripts/openapi-check \(arguments.first ?? "") did not finish within \(timeout)")
        }
        return try result(of: run)
    }

    /// The same, for quick commands that need no server in this process.
    static func runOpenAPICheck(_ arguments: [String], input: Data = Data()) throws -> (Int32, Data, String) {
        let run = try pythonCheck(arguments, input: input)
        run.waitUntilExit()
        return try result(of: run)
    }

    private static func pythonCheck(_ arguments: [String], input: Data) throws -> Spawned {
        try Spawned("/usr/bin/env", ["python3", root.appendingPathComponent("scripts/openapi-check").path] + arguments,
                    workingDirectory: root.path, input: input)
    }

    private static func result(of run: Spawned) throws -> (Int32, Data, String) {
        let errors = String(decoding: run.standardError, as: UTF8.self)
        let install = "`scripts/test` (it installs scripts/python-requirements.txt into .build/venv, first on PATH)"
        switch run.status {
        case 127: throw TestSetupError("python3 was not found on PATH: install Python 3, then run \(install)")
        case 3: throw TestSetupError("a Python package scripts/openapi-check needs is missing: run \(install)\n\(errors)")
        default: return (run.status ?? -1, run.standardOutput, errors)
        }
    }
}

/// One request to a live server and its answer, as `scripts/openapi-check exchanges` reads it.
struct Exchange: Encodable, Sendable {
    let method: String
    let path: String
    let request_headers: [String: String]
    /// Base64, or nil when no body was sent.
    let request_body: String?
    let status: Int
    let headers: [String: String]
    let body: String
    /// Whether the request itself must be valid by the document (refusals are sent on purpose
    /// with what the document forbids).
    let validate_request: Bool
}

/// Sends requests to a live server and keeps each request and answer for validation.
final class ExchangeLog: @unchecked Sendable {
    // @unchecked: used from one task at a time; the lock only guards against misuse.
    private let lock = NSLock()
    private var recorded: [Exchange] = []
    let http: HTTPTestClient
    let signer = EventSigner(secret: LiveServer.ingestSecret)

    init(http: HTTPTestClient) {
        self.http = http
    }

    var exchanges: [Exchange] { lock.withLock { recorded } }

    @discardableResult
    func send(_ method: HTTPMethod, _ path: String, token: String? = nil, validate: Bool = true,
              json: [String: Any]? = nil, raw: [UInt8]? = nil, headers extra: [(String, String)] = []) async throws -> TestHTTPResponse {
        var headers = extra
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        var body = raw
        if let json { body = Array(try JSONSerialization.data(withJSONObject: json)) }
        if body != nil, !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            headers.append(("Content-Type", "application/json"))
        }
        return try await exchange(method, path, headers: headers, body: body, validate: validate)
    }

    /// `POST /v1/events`, signed with the ingest secret.
    @discardableResult
    func ingest(_ body: [UInt8], contentType: String = "application/json", validate: Bool = true) async throws -> TestHTTPResponse {
        try await exchange(.POST, "/v1/events", headers: try signer.headers(for: body, contentType: contentType), body: body,
                           validate: validate)
    }

    private func exchange(_ method: HTTPMethod, _ path: String, headers: [(String, String)], body: [UInt8]?,
                          validate: Bool) async throws -> TestHTTPResponse {
        let response = try await http.send(method, path, headers: headers, body: body)
        var answerHeaders: [String: String] = [:]
        for (name, value) in response.headers { answerHeaders[name.lowercased()] = value }
        let exchange = Exchange(
            method: method.rawValue, path: path,
            request_headers: Dictionary(headers.map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { _, last in last }),
            request_body: body.map { Data($0).base64EncodedString() }, status: response.status, headers: answerHeaders,
            body: response.body.base64EncodedString(), validate_request: validate
        )
        lock.withLock { recorded.append(exchange) }
        return response
    }
}
