import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// `/console`: the support console, server-rendered pages over the same store and rules as
/// the support API. Reading pages are here; the forms that change something are in
/// `ConsoleController+Actions.swift`. Every page needs a signed-in `support` or `admin`
/// session (the audit log: `admin`); every POST that changes something needs the session's
/// CSRF token. Pages work without JavaScript, and the CSP lets none run.
struct ConsoleController<Context: RequestContext>: Sendable {
    let store: any EchoRelayStore
    let sessions: ConsoleSessions
    let renderer: ConsoleRenderer
    let workCreated: @Sendable (CreatedWork) -> Void
    /// A subscription's test delivery; nil: not offered.
    let sendTestDelivery: SendTestDelivery?
    let metrics: RelayMetrics
    /// Whether a Shared Signals transmitter is configured (its page says how to, if not).
    let sharedSignalsConfigured: Bool
    let now: @Sendable () -> Date

    func addRoutes(to router: Router<Context>) {
        router.get("/console/console.css") { _, _ in
            var headers = ConsoleRenderer.securityHeaders
            headers[.contentType] = "text/css; charset=utf-8"
            headers[.cacheControl] = "public, max-age=3600"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: ConsoleRenderer.styleSheet)))
        }
        // The server's front door, for a browser: where the console and the API's description are.
        router.get("/") { _, _ in
            renderer.render("index", ConsoleRenderer.Document(title: "EchoRelay", session: nil, page: ()))
        }
        router.get("/console/sign-in", use: signInForm)
        router.post("/console/sign-in", use: signIn)
        router.post("/console/sign-out", use: signOut)
        router.get("/console", use: home)
        router.get("/console/users", use: findUser)
        router.get("/console/search", use: search)
        router.get("/console/users/{user_id}", use: user)
        router.get("/console/events", use: recentEvents)
        router.get("/console/events/{id}", use: event)
        router.post("/console/events/{id}/replay", use: replayEvent)
        router.get("/console/replays/new", use: bulkReplayForm)
        router.post("/console/replays", use: bulkReplay)
        router.get("/console/replays/{id}", use: replay)
        router.post("/console/replays/{id}/cancel", use: cancelReplay)
        router.get("/console/dead-letters", use: deadLetters)
        router.post("/console/dead-letters/redrive", use: redrive)
        router.get("/console/subscriptions", use: subscriptions)
        router.get("/console/subscriptions/{id}", use: subscription)
        router.get("/console/subscriptions/{id}/deliveries", use: subscriptionDeliveries)
        router.get("/console/subscriptions/{id}/deliveries/{delivery_id}", use: deliveryAttempts)
        for action in SubscriptionAction.allCases {
            router.post("/console/subscriptions/{id}/\(action.rawValue)") { request, context in
                try await subscriptionAction(action, request, context: context)
            }
        }
        router.get("/console/audit", use: audit)
        router.get("/console/shared-signals", use: sharedSignals)
    }

    // MARK: Sessions

    /// A signed-in request: who, and how to render a page for them.
    struct Signed {
        let session: ConsoleSession
        let controller: ConsoleController
        /// The posted form, for a POST (already checked for the CSRF token).
        let form: ConsoleForm?

        var actor: Principal { session.principal }

        func page(_ template: String, title: String, status: HTTPResponse.Status = .ok, notice: String? = nil,
                  problem: ConsoleRenderer.ProblemView? = nil, refresh: Int? = nil, _ page: Any) -> Response {
            controller.renderer.render(template, status: status, ConsoleRenderer.Document(
                title: title, session: session, notice: notice, problem: problem, refresh: refresh, page: page
            ))
        }
    }

    /// Runs `body` for a signed-in member of `roles`; anyone else is sent to the sign-in page
    /// (or shown a 403 page for the wrong role). A POST must carry the session's CSRF token.
    /// Errors become HTML pages with their status, never a JSON problem.
    func signedIn(_ request: Request, context: Context, roles: Set<Role> = .staff,
                  _ body: (Signed) async throws -> Response) async -> Response {
        let session: ConsoleSession?
        do {
            session = try await sessions.current(request)
        } catch {
            return failure(error, session: nil, context: context)
        }
        guard let session else {
            return request.method == .get ? ConsoleRenderer.redirect(to: "/console/sign-in")
                : message(nil, status: .unauthorized, heading: "Signed out",
                          text: "Your session has ended, so nothing was changed. Sign in and try again.", link: ("Sign in", "/console/sign-in"))
        }
        var form: ConsoleForm?
        if request.method == .post {
            do {
                form = try await ConsoleForm.read(request)
            } catch {
                return failure(error, session: session, context: context)
            }
            guard ConsoleSessions.tokensMatch(form?.value("csrf"), session.formToken) else {
                context.logger.warning("console form refused: missing or wrong CSRF token", metadata: ["actor": "\(session.principal.name)"])
                return message(session, status: .forbidden, heading: "Form refused",
                               text: "This form did not come from a page of your session, so nothing was changed. Reload the page and try again.",
                               link: nil)
            }
        }
        guard roles.contains(session.principal.role) else {
            // An app team's portal has its own subscriptions only: anything else does not exist
            // for it, as in the API.
            if session.principal.role == .app {
                return message(session, status: .notFound, heading: "Not found", text: "There is no such page here.",
                               link: ("Your subscriptions", "/console/subscriptions"))
            }
            return message(session, status: .forbidden, heading: "Not for your role",
                           text: Problem.forbidden(allowed: roles, actual: session.principal.role).detail ?? "", link: nil)
        }
        do {
            return try await body(Signed(session: session, controller: self, form: form))
        } catch {
            return failure(error, session: session, context: context)
        }
    }

    func message(_ session: ConsoleSession?, status: HTTPResponse.Status, heading: String, text: String,
                 link: (label: String, href: String)?) -> Response {
        renderer.render("message", status: status, ConsoleRenderer.Document(
            title: heading, session: session,
            page: MessagePage(heading: heading, text: text, link: link.map { MessagePage.Link(label: $0.label, href: $0.href) })
        ))
    }

    /// An error as a page: a problem with its own status and text, the store away as 503,
    /// anything else as 500 (logged, never shown).
    func failure(_ error: any Error, session: ConsoleSession?, context: Context) -> Response {
        switch error {
        case let problem as Problem:
            let fields = problem.errors.map { "\($0.field): \($0.reason)" }.joined(separator: "; ")
            return message(session, status: problem.status, heading: problem.title,
                           text: [problem.detail, fields.isEmpty ? nil : fields].compactMap { $0 }.joined(separator: " — "), link: nil)
        case StoreError.unavailable:
            context.logger.error("console page failed: the database is unavailable", metadata: ["error": "\(error)"])
            return message(session, status: .serviceUnavailable, heading: "Database unavailable",
                           text: "EchoRelay cannot reach its database right now. Nothing was changed; try again in a moment.", link: nil)
        default:
            context.logger.error("console page failed", metadata: ["error": "\(error)"])
            return message(session, status: .internalServerError, heading: "Something went wrong",
                           text: "The page could not be shown; the error is in the server's log.", link: nil)
        }
    }

    @Sendable func signInForm(_ request: Request, context: Context) async throws -> Response {
        if (try? await sessions.current(request)) != nil {
            return ConsoleRenderer.redirect(to: "/console")
        }
        return signInPage(request, status: .ok, problem: nil)
    }

    private func signInPage(_ request: Request, status: HTTPResponse.Status, problem: String?) -> Response {
        let csrf = AccessTokenText.randomBody()
        var headers = HTTPFields()
        headers[.setCookie] = Cookie(name: ConsoleSessions.signInCookieName, value: csrf, maxAge: 3600, path: "/console",
                                     secure: ConsoleSessions.isSecure(request), httpOnly: true, sameSite: .strict).description
        return renderer.render("sign_in", status: status, ConsoleRenderer.Document(
            title: "Sign in", session: nil, problem: problem.map { .init(title: "Not signed in", detail: $0, fields: []) },
            page: SignInPage(csrf: csrf)
        ), headers: headers)
    }

    @Sendable func signIn(_ request: Request, context: Context) async throws -> Response {
        let form = try await ConsoleForm.read(request)
        guard let expected = request.cookies[ConsoleSessions.signInCookieName]?.value,
              ConsoleSessions.tokensMatch(form.value("csrf"), expected) else {
            return signInPage(request, status: .forbidden, problem: "the sign-in form had expired; enter the token again")
        }
        guard let token = form.value("token")?.trimmingCharacters(in: .whitespaces), !token.isEmpty else {
            return signInPage(request, status: .unprocessableContent, problem: "token: enter an access token (support, admin, or an app team's)")
        }
        let principal: Principal
        do {
            principal = try await sessions.authorizer.authenticate(token: token)
        } catch {
            if error.status == .unauthorized {
                context.logger.notice("console sign-in refused: the token is not valid")
                return signInPage(request, status: .unauthorized, problem: "token: this token is not valid (unknown or revoked)")
            }
            return failure(error, session: nil, context: context)
        }

        do {
            let secure = ConsoleSessions.isSecure(request)
            let (_, cookie) = try await sessions.open(for: principal, token: token, secure: secure)
            context.logger.info("console sign-in", metadata: ["actor": "\(principal.name)", "role": "\(principal.role.rawValue)"])
            var headers = HTTPFields()
            headers.append(HTTPField(name: .setCookie, value: cookie.description))
            headers.append(HTTPField(name: .setCookie, value: ConsoleSessions.expired(ConsoleSessions.signInCookieName, secure: secure).description))
            // An app team starts at its subscriptions, the only pages it has.
            return ConsoleRenderer.redirect(to: principal.role == .app ? "/console/subscriptions" : "/console", headers: headers)
        } catch {
            return failure(error, session: nil, context: context)
        }
    }

    @Sendable func signOut(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let cookie = try await sessions.close(request)
            context.logger.info("console sign-out", metadata: ["actor": "\(signed.actor.name)"])
            return ConsoleRenderer.redirect(to: "/console/sign-in", headers: [.setCookie: cookie.description])
        }
    }

    // MARK: Reading pages

    @Sendable func home(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context, roles: .everyone) { signed in
            // An app team's portal starts at its subscriptions.
            guard Set<Role>.staff.contains(signed.actor.role) else { return ConsoleRenderer.redirect(to: "/console/subscriptions") }
            return signed.page("home", title: "Find a user", HomePage(userID: ""))
        }
    }

    /// The search form's GET: on to the user's timeline.
    @Sendable func findUser(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let userID = (request.uri.queryParameters.get("user_id") ?? "").trimmingCharacters(in: .whitespaces)
            if let problem = userID.isEmpty ? "must not be empty" : EventFieldRules.userIDProblem(userID) {
                return signed.page("home", title: "Find a user", status: .unprocessableContent,
                                   problem: .init(title: "No such user id", detail: nil, fields: [FieldProblem(field: "user_id", reason: problem)]),
                                   HomePage(userID: userID))
            }
            return ConsoleRenderer.redirect(to: ConsolePath.user(userID))
        }
    }

    /// The search box: a webhook-id opens the event it carried at that delivery, an event id
    /// the event, anything else the timeline of the user with that id.
    @Sendable func search(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let text = (request.uri.queryParameters.get("q") ?? "").trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("msg_"), let found = try await store.deliveries(webhookID: text) {
                return ConsoleRenderer.redirect(to: ConsolePath.event(found.eventID) + "#" + ConsolePath.deliveryAnchor(text))
            }
            if !text.isEmpty, text.count <= 255, try await store.event(id: text) != nil {
                return ConsoleRenderer.redirect(to: ConsolePath.event(text))
            }
            if let problem = text.isEmpty ? "must not be empty" : EventFieldRules.userIDProblem(text) {
                return signed.page("home", title: "Find a user", status: .unprocessableContent,
                                   problem: .init(title: "Nothing found", detail: "no user, event or delivery has this id",
                                                  fields: [FieldProblem(field: "q", reason: problem)]),
                                   HomePage(userID: text))
            }
            return ConsoleRenderer.redirect(to: ConsolePath.user(text))
        }
    }

    @Sendable func user(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let userID = try context.parameters.decoded("user_id")
            var reader = QueryReader(request)
            var query = TimelineQuery(userID: userID, beforeSequence: reader.cursor())
            let limit = reader.limit()
            try reader.finish()
            async let state = store.user(id: userID)
            let entries = try await PageCut.fetch(limit: limit) { rows in
                query.limit = rows
                return try await store.timeline(query)
            }
            let names = try await subscriptionNames(entries.shown.flatMap { $0.deliveries.bySubscription.map(\.subscriptionID) })
            let now = now()
            let page = UserPage(
                userID: userID, state: try await state.map { UserPage.State($0, now: now) },
                events: entries.shown.map { TimelineRow($0, names: names, now: now) },
                older: entries.cursorRow.map { ConsolePath.user(userID) + "?cursor=\($0.event.sequence)" },
                bulkReplay: "/console/replays/new?" + ConsolePath.query([("user_id", userID)])
            )
            return signed.page("user", title: "User \(userID)", page)
        }
    }

    /// Every user's events, newest received first, with the filters of `GET /v1/events`.
    @Sendable func recentEvents(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            var reader = QueryReader(request, emptyIsAbsent: true)
            var query = reader.recentEvents()
            let entries = try await reader.page { rows in
                query.limit = rows
                return try await store.recentEvents(query)
            }
            let parameters = request.uri.queryParameters
            let names = try await subscriptionNames(entries.shown.flatMap { $0.deliveries.bySubscription.map(\.subscriptionID) })
            let now = now()
            let filters: [(String, String?)] = ["type", "status", "reason", "subscription_id", "since", "until"].map { name in
                (name, parameters.get(name).flatMap { $0.isEmpty ? nil : $0 })
            }
            let older = entries.cursorRow.map { last in
                "/console/events?" + ConsolePath.query(filters + [("cursor", RecentEventsCursor(after: last.event).text)])
            }
            return signed.page("recent_events", title: "Recent events", RecentEventsPage(
                query, since: parameters.get("since") ?? "", until: parameters.get("until") ?? "",
                events: entries.shown.map { TimelineRow($0, names: names, now: now) }, older: older
            ))
        }
    }

    @Sendable func event(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let id = try context.parameters.decoded("id")
            var notice: String?
            if let replayID = request.uri.queryParameters.get("replayed"), let replay = try await store.replay(id: replayID),
               replay.eventID == id {
                notice = "Replay \(replay.id) queued: \(replay.matched) deliver\(replay.matched == 1 ? "y" : "ies") will be sent again."
            }
            return try await eventPage(signed, id: id, notice: notice, problem: nil, reasonDraft: "", status: .ok)
        }
    }

    func eventPage(_ signed: Signed, id: String, notice: String?, problem: ConsoleRenderer.ProblemView?, reasonDraft: String,
                   status: HTTPResponse.Status) async throws -> Response {
        guard let event = try await store.event(id: id) else { throw Problem.notFound("no event with id \"\(id)\"") }
        let deliveries = try await store.deliveries(eventID: id)
        let offered = event.status == .verified ? try await firstSubscriptions(wanting: event.type) : []
        let named = try await store.subscriptions(ids: Array(Set(deliveries.map(\.subscriptionID)).subtracting(offered.map(\.id))))
        let origin = event.source == .set ? try await store.securityEvent(eventID: id) : nil
        let page = EventPage(event, deliveries: deliveries, subscriptions: offered, names: SubscriptionNames(offered + named),
                             securityEvent: origin, reasonDraft: reasonDraft, now: now())
        return signed.page("event", title: "Event \(id)", status: status, notice: notice, problem: problem, page)
    }

    /// The names of the subscriptions a page shows, read by id: a page costs what it shows,
    /// however many subscriptions there are.
    func subscriptionNames(_ ids: [String]) async throws -> SubscriptionNames {
        SubscriptionNames(try await store.subscriptions(ids: Array(Set(ids))))
    }

    /// The subscriptions an event's replay form offers: those that want its type, among the
    /// first `offeredAtMost` (oldest first); the API's replay takes any list of ids.
    func firstSubscriptions(wanting type: EventType) async throws -> [Subscription] {
        var wanting: [Subscription] = []
        var cursor: String?
        var read = 0
        repeat {
            let page = try await store.subscriptions(owner: nil, cursor: cursor, limit: 200)
            wanting += page.subscriptions.filter { $0.eventTypes.contains(type) }
            read += page.subscriptions.count
            cursor = page.nextCursor
        } while cursor != nil && read < Self.offeredAtMost
        return wanting
    }

    static var offeredAtMost: Int { 1_000 }

    @Sendable func replay(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let id = try context.parameters.decoded("id")
            guard let replay = try await store.replay(id: id) else { throw Problem.notFound("no replay with id \"\(id)\"") }
            let page = ReplayPage(replay, now: now())
            return signed.page("replay", title: "Replay \(id)", refresh: page.running ? 3 : nil, page)
        }
    }

    @Sendable func deadLetters(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            var reader = QueryReader(request)
            var filter = DeadLetterFilter()
            filter.subscriptionID = reader.string("subscription_id")
            let cursor: Int64? = reader.cursor()
            let letters = try await reader.page { try await store.deadLetters(filter, beforeID: cursor, limit: $0) }
            let names = try await subscriptionNames(letters.shown.map(\.subscriptionID))
            let now = now()
            let older = letters.cursorRow.map { last in
                "/console/dead-letters?" + ConsolePath.query([("subscription_id", filter.subscriptionID), ("cursor", String(last.deliveryID))])
            }
            let notice = request.uri.queryParameters.get("redriven").map { "\($0) dead letter(s) queued to be sent again." }
            return signed.page("dead_letters", title: "Dead letters", notice: notice, DeadLettersPage(
                subscriptionID: filter.subscriptionID ?? "", letters: letters.shown.map { DeadLetterRow($0, names: names, now: now) }, older: older
            ))
        }
    }

    @Sendable func subscriptions(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context, roles: .everyone) { signed in
            let cursor = request.uri.queryParameters.get("cursor")
            let page: SubscriptionPage
            do {
                // An app token sees the subscriptions it made, as in the API.
                let owner = signed.actor.role == .app ? (signed.actor.tokenID ?? "-") : nil
                page = try await store.subscriptions(owner: owner, cursor: cursor, limit: 100)
            } catch is SubscriptionCursorError {
                throw Problem(.badRequest, slug: "invalid-query", title: "Invalid query", detail: "cursor: not a cursor this server gave out")
            }
            let now = now()
            return signed.page("subscriptions", title: "Subscriptions", SubscriptionsPage(
                subscriptions: page.subscriptions.map { SubscriptionRow($0, now: now) },
                next: page.nextCursor.map { "/console/subscriptions?" + ConsolePath.query([("cursor", $0)]) }
            ))
        }
    }

    /// The Shared Signals stream (status, last verification) and the latest SETs (admin: the
    /// stream is an operator's).
    @Sendable func sharedSignals(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context, roles: [.admin]) { signed in
            let now = now()
            let stream = try await store.securityEventStream().map { SharedSignalsPage.StreamView($0, now: now) }
            let sets = try await store.securityEvents(disposition: nil, before: nil, limit: 20).map { SharedSignalsPage.SetRow($0, now: now) }
            return signed.page("shared_signals", title: "Shared Signals",
                               SharedSignalsPage(configured: sharedSignalsConfigured, stream: stream, sets: sets))
        }
    }

    @Sendable func audit(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context, roles: [.admin]) { signed in
            var reader = QueryReader(request)
            var query = AuditQuery(action: reader.string("action"), target: reader.string("target"))
            query.beforeID = reader.cursor()
            let entries = try await reader.page { rows in
                query.limit = rows
                return try await store.auditEntries(query)
            }
            let now = now()
            let older = entries.cursorRow.map { last in
                "/console/audit?" + ConsolePath.query([("action", query.action), ("target", query.target), ("cursor", String(last.id))])
            }
            return signed.page("audit", title: "Audit log", AuditPage(
                action: query.action ?? "", target: query.target ?? "", entries: entries.shown.map { AuditRow($0, now: now) }, older: older
            ))
        }
    }
}

extension Set<Role> {
    /// Every role: the pages an app team's portal shares with staff (its own subscriptions).
    static var everyone: Set<Role> { Set(Role.allCases) }
}

/// The console's own addresses, with every id percent-encoded into its path segment.
enum ConsolePath {
    private static let segment: CharacterSet = {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#%")
        return allowed
    }()

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: segment) ?? ""
    }

    static func user(_ id: String) -> String { "/console/users/" + encode(id) }
    static func event(_ id: String) -> String { "/console/events/" + encode(id) }
    static func replay(_ id: String) -> String { "/console/replays/" + encode(id) }
    static func subscription(_ id: String) -> String { "/console/subscriptions/" + encode(id) }
    /// The id of a delivery's part of the event page, by its webhook-id (letters, digits, `_`).
    static func deliveryAnchor(_ webhookID: String) -> String { "delivery-" + webhookID.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") } }

    /// `name=value&…` of the pairs that have a value.
    static func query(_ pairs: [(String, String?)]) -> String {
        pairs.compactMap { name, value in
            value.map { "\(name)=\($0.addingPercentEncoding(withAllowedCharacters: queryValue) ?? "")" }
        }.joined(separator: "&")
    }

    /// RFC 3986 unreserved characters: everything else in a query value is percent-encoded.
    private static let queryValue: CharacterSet = {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return allowed
    }()
}
