import EchoRelayAPI
import EchoRelayCore
import Hummingbird
import Logging

/// `/v1/subscriptions`: app backends register where verified updates go. An `app` token sees
/// only the subscriptions it created; `admin` sees all.
struct SubscriptionsController<Context: RequestContext>: Sendable {
    static var secretOverlap: Duration { .seconds(24 * 3600) }

    let store: any SubscriptionStore & AuditStore
    let authorizer: BearerAuthorizer
    let urlPolicy: SubscriberURLPolicy
    /// `ECHORELAY_MAX_SUBSCRIPTIONS_PER_APP`: how many subscriptions one app token may have.
    let maxPerApp: Int

    func addRoutes(to router: Router<Context>) {
        router.post("/v1/subscriptions", use: create)
        router.get("/v1/subscriptions", use: list)
        router.get("/v1/subscriptions/{id}", use: show)
        router.patch("/v1/subscriptions/{id}", use: update)
        router.delete("/v1/subscriptions/{id}", use: delete)
        router.post("/v1/subscriptions/{id}/enable") { request, context in try await setEnabled(request, context, true) }
        router.post("/v1/subscriptions/{id}/disable") { request, context in try await setEnabled(request, context, false) }
        router.post("/v1/subscriptions/{id}/rotate-secret", use: rotateSecret)
    }

    private func principal(_ request: Request) async throws -> Principal {
        try await authorizer.require(request, roles: [.admin, .app])
    }

    /// The subscription if this principal may see it; 404 otherwise, so that an app cannot
    /// learn which ids other apps have.
    private func owned(_ request: Request, _ context: Context) async throws -> (Principal, Subscription) {
        let principal = try await principal(request)
        return (principal, try await store.subscription(id: try context.parameters.decoded("id"), seenBy: principal))
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let principal = try await principal(request)
        var fields = try await SubscriptionInput.parse(request, requireAll: true)
        fields.url = try checkedURL(fields.url)
        let secret = WebhookSecret.generate()
        let subscription: Subscription
        do {
            subscription = try await store.createSubscription(
                fields, ownerTokenID: principal.role == .app ? principal.tokenID : nil, secret: secret,
                limit: principal.role == .app ? maxPerApp : nil, audit: note(principal, "subscription.create", context)
            )
        } catch let reached as SubscriptionLimitReached {
            throw Problem(.unprocessableContent, slug: "subscription-limit", title: "Too many subscriptions",
                          detail: "this app already has \(reached.limit) subscriptions, the most ECHORELAY_MAX_SUBSCRIPTIONS_PER_APP allows; delete one first",
                          errors: [FieldProblem(field: "ECHORELAY_MAX_SUBSCRIPTIONS_PER_APP", reason: "at most \(reached.limit) subscriptions per app")])
        }
        logChange("subscription.create", subscription.id, principal, context)
        return try JSONResponse.make(status: .created, API.Subscription(subscription, secret: secret))
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let principal = try await principal(request)
        var limit = 50
        if let text = request.uri.queryParameters.get("limit") {
            guard let number = Int(text), (1...100).contains(number) else {
                throw Problem(.badRequest, slug: "invalid-query", title: "Invalid query", detail: "limit must be 1 to 100",
                              errors: [FieldProblem(field: "limit", reason: "must be a whole number from 1 to 100")])
            }
            limit = number
        }
        let page: SubscriptionPage
        do {
            page = try await store.subscriptions(
                owner: principal.role == .admin ? nil : (principal.tokenID ?? "-"),
                cursor: request.uri.queryParameters.get("cursor"), limit: limit
            )
        } catch is SubscriptionCursorError {
            throw Problem(.badRequest, slug: "invalid-query", title: "Invalid query", detail: "the cursor is not one this server gave",
                          errors: [FieldProblem(field: "cursor", reason: "is not a cursor this server gave")])
        }
        return try JSONResponse.make(API.SubscriptionList(page.subscriptions.map { API.Subscription($0) },
                                                          next_cursor: page.nextCursor))
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let (_, subscription) = try await owned(request, context)
        return try JSONResponse.make(API.Subscription(subscription))
    }

    @Sendable func update(_ request: Request, context: Context) async throws -> Response {
        let (principal, subscription) = try await owned(request, context)
        var fields = try await SubscriptionInput.parse(request, requireAll: false)
        if fields.url != nil { fields.url = try checkedURL(fields.url) }
        guard let updated = try await store.updateSubscription(id: subscription.id, fields,
                                                               audit: note(principal, "subscription.update", context)) else {
            throw Problem.notFound("no subscription with id \"\(subscription.id)\"")
        }
        logChange("subscription.update", subscription.id, principal, context)
        return try JSONResponse.make(API.Subscription(updated))
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> Response {
        let (principal, subscription) = try await owned(request, context)
        _ = try await store.deleteSubscription(id: subscription.id, audit: note(principal, "subscription.delete", context))
        logChange("subscription.delete", subscription.id, principal, context)
        return Response(status: .noContent)
    }

    private func setEnabled(_ request: Request, _ context: Context, _ enabled: Bool) async throws -> Response {
        let (principal, subscription) = try await owned(request, context)
        let action = enabled ? "subscription.enable" : "subscription.disable"
        guard let changed = try await store.setSubscriptionEnabled(
            id: subscription.id, enabled, reason: enabled ? nil : SubscriptionHealth.disabledByPersonPrefix + principal.name,
            audit: note(principal, action, context)
        ) else { throw Problem.notFound("no subscription with id \"\(subscription.id)\"") }
        logChange(action, subscription.id, principal, context)
        return try JSONResponse.make(API.Subscription(changed))
    }

    @Sendable func rotateSecret(_ request: Request, context: Context) async throws -> Response {
        let (principal, subscription) = try await owned(request, context)
        let secret = WebhookSecret.generate()
        guard let rotated = try await store.rotateSubscriptionSecret(id: subscription.id, newSecret: secret, overlap: Self.secretOverlap,
                                                                     audit: note(principal, "subscription.rotate_secret", context)) else {
            throw Problem.notFound("no subscription with id \"\(subscription.id)\"")
        }
        logChange("subscription.rotate_secret", subscription.id, principal, context)
        return try JSONResponse.make(API.Subscription(rotated, secret: secret))
    }

    /// The audit entry the store writes in the change's own transaction.
    private func note(_ principal: Principal, _ action: String, _ context: Context) -> AuditNote {
        AuditNote(actor: principal, action: action)
    }

    private func logChange(_ action: String, _ id: String, _ principal: Principal, _ context: Context) {
        context.logger.info("\(action)", metadata: ["subscription.id": "\(id)", "actor": "\(principal.name)"])
    }

    private func checkedURL(_ url: String?) throws -> String {
        switch urlPolicy.check(url ?? "") {
        case .success(let normalized): return normalized
        case .failure(let problem):
            throw Problem(.unprocessableContent, slug: "invalid-subscription", title: "Invalid subscription",
                          fields: [FieldProblem(field: "url", reason: problem.reason)])
        }
    }
}

/// Reads and validates a subscription body, naming every bad field.
enum SubscriptionInput {
    static func parse(_ request: Request, requireAll: Bool) async throws -> SubscriptionFields {
        let body = try await request.body.collect(upTo: EchoRelayRequestContext.maxBodySize)
        guard case .object(let object)? = try? JSONValue.parse(body.readableBytesView) else {
            throw Problem(.badRequest, slug: "malformed-body", title: "Malformed body", detail: "the body must be a JSON object")
        }
        var fields = SubscriptionFields()
        var problems: [FieldProblem] = []

        switch object["url"] {
        case .string(let url)? where TextRules.containsNUL(url): problems.append(.init(field: "url", reason: TextRules.nulReason))
        case .string(let url)?: fields.url = url
        case nil where !requireAll: break
        case nil, .null?: problems.append(.init(field: "url", reason: "is required"))
        case let other?: problems.append(.init(field: "url", reason: "must be a string, not \(other.typeName)"))
        }

        switch object["event_types"] {
        case .array(let values)?:
            var types: [EventType] = []
            for value in values {
                guard let text = value.stringValue, let type = EventType(rawValue: text) else {
                    problems.append(.init(field: "event_types", reason: "each " + EventFieldRules.typeReason))
                    break
                }
                if !types.contains(type) { types.append(type) }
            }
            if values.isEmpty { problems.append(.init(field: "event_types", reason: "must name at least one event type")) }
            fields.eventTypes = types
        case nil where !requireAll: break
        case nil, .null?: problems.append(.init(field: "event_types", reason: "is required"))
        case let other?: problems.append(.init(field: "event_types", reason: "must be an array, not \(other.typeName)"))
        }

        switch object["description"] {
        case nil: break
        case .null?: fields.description = .some(nil)
        case .string(let text)?:
            if text.count > 500 { problems.append(.init(field: "description", reason: "must be at most 500 characters")) }
            if TextRules.containsNUL(text) { problems.append(.init(field: "description", reason: TextRules.nulReason)) }
            fields.description = .some(text)
        case let other?: problems.append(.init(field: "description", reason: "must be a string, not \(other.typeName)"))
        }

        switch object["ordered"] {
        case nil: break
        case .bool(let ordered)?: fields.ordered = ordered
        case let other?: problems.append(.init(field: "ordered", reason: "must be true or false, not \(other.typeName)"))
        }

        guard problems.isEmpty else {
            throw Problem(.unprocessableContent, slug: "invalid-subscription", title: "Invalid subscription", fields: problems)
        }
        return fields
    }
}

extension SubscriptionStore {
    /// The subscription `id` as `principal` may see it: staff any, an app token only those it
    /// created. Another app's answers 404 like an unknown id, so that ids cannot be probed.
    func subscription(id: String, seenBy principal: Principal) async throws -> Subscription {
        guard let subscription = try await subscription(id: id),
              principal.role != .app || subscription.ownerTokenID == principal.tokenID
        else { throw Problem.notFound("no subscription with id \"\(id)\"") }
        return subscription
    }
}
