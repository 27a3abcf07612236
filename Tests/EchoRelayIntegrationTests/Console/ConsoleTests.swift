import EchoRelayCore
@testable import EchoRelayHTTP
import EchoRelayPostgres
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import TestSupport
import Testing

/// `/console` against a live server, a real database, the stand-in provider and a stand-in
/// subscriber, page by page: sign-in and sessions, what each page shows, escaping, CSRF.
@Suite struct ConsoleTests {
    static let policy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    @Test func signingInWithAStaffTokenOpensAnHttpOnlyStrictSessionAndOtherTokensAreRefused() async throws {
        try await EchoFixture.run { f in
            let support = try await SubscriptionsAPITests.token("support", "Sam from support", f.server)
            let app = try await SubscriptionsAPITests.token("app", "billing backend", f.server)
            let browser = ConsoleBrowser(port: f.server.http.port)

            let anonymous = try await browser.get("/console")
            #expect(anonymous.status == 303 && anonymous.headers["Location"] == ["/console/sign-in"])
            #expect(try await browser.post("/console/sign-out", [("csrf", "x")]).status == 401, "no session: nothing to sign out of")

            // The sign-in form's POST needs the cookie its GET set (login CSRF).
            #expect(try await ConsoleBrowser(port: f.server.http.port).post("/console/sign-in", [("csrf", "made-up"), ("token", support)]).status == 403)
            let portal = try await ConsoleBrowser(port: f.server.http.port).signIn(token: app)
            #expect(portal.status == 303 && portal.headers["Location"] == ["/console/subscriptions"], "an app team signs in to its portal: \(portal.status) \(portal.text)")
            #expect(try await browser.signIn(token: "er_" + String(repeating: "A", count: 43)).status == 401)
            #expect(browser.cookieJar[ConsoleSessions.cookieName] == nil)

            let signedIn = try await browser.signIn(token: support)
            #expect(signedIn.status == 303 && signedIn.headers["Location"] == ["/console"])
            let cookie = try #require(signedIn.headers["Set-Cookie"].first { $0.hasPrefix(ConsoleSessions.cookieName + "=") })
            for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] { #expect(cookie.contains(attribute), "\(attribute)") }
            #expect(!cookie.contains("Secure"), "plain http: a Secure cookie would never come back")
            #expect(!cookie.contains(support), "the cookie holds a session key, not the token")

            let home = try await browser.get("/console")
            #expect(home.status == 200 && home.text.contains("Sam from support (support)"))
            #expect(!home.text.contains(support), "the token never appears in a page")
            #expect(home.headers["Content-Security-Policy"] == [Self.policy])

            // Over TLS (as a proxy in front says), the cookie is Secure too.
            let tls = try await ConsoleBrowser(port: f.server.http.port).signIn(token: support, headers: [("X-Forwarded-Proto", "https")])
            #expect(tls.headers["Set-Cookie"].contains { $0.hasPrefix(ConsoleSessions.cookieName + "=") && $0.contains("Secure") })

            // Signing out needs the session's CSRF token; then the session is gone.
            #expect(try await browser.post("/console/sign-out", [("csrf", "forged")]).status == 403)
            #expect(try await browser.get("/console").status == 200)
            let signOut = try await browser.post("/console/sign-out", [("csrf", try await browser.formToken())])
            #expect(signOut.status == 303 && signOut.headers["Location"] == ["/console/sign-in"])
            #expect(try await browser.get("/console").status == 303)
        }
    }

    @Test func revokingTheTokenEndsItsSessionsAtOnce() async throws {
        try await EchoFixture.run { f in
            let support = try await SubscriptionsAPITests.token("support", "Sam from support", f.server)
            let browser = ConsoleBrowser(port: f.server.http.port)
            try await browser.signIn(token: support)
            #expect(try await browser.get("/console").status == 200)
            let id = try #require(try await f.server.database.withClient { client in
                try await PostgresEventStore(client: client, logger: TestLogger.quiet).accessTokens().first { $0.name == "Sam from support" }?.id
            })
            #expect(try await ChildProcess.run(["tokens", "revoke", id], environment: ["ECHORELAY_DATABASE_URL": f.server.database.url]).status == 0)
            #expect(try await browser.get("/console").status == 303)
        }
    }

    @Test func everyPageRendersForSupportStaffAndTheAuditLogOnlyForAdmins() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let subscriptionID = try #require(subscription["id"] as? String)
                let event = try await f.pushVerified("phone.changed", userID: "u-pages", phone: "+15550001111",
                                                     session: try f.session("u-pages", phone: "+15550001111"))
                let eventID = try #require(event["id"] as? String)
                _ = try await f.finalDeliveries(of: eventID, count: 1)
                let support = ConsoleBrowser(port: f.server.http.port)
                try await support.signIn(token: try await SubscriptionsAPITests.token("support", "Sam", f.server))
                // A subscription without a description is named by its URL's host; its id stays as the title.
                let named = #"title="\#(subscriptionID)">127.0.0.1 delivered</span>"#

                let pages: [(String, [String])] = [
                    ("/console", ["Find a user", #"href="/console/events""#]),
                    ("/console/events", ["Recent events", eventID, "/console/users/u-pages", named, #"<td class="nowrap"><code>phone.changed"#]),
                    ("/console/events?type=phone.changed&status=verified&reason=provider_confirmed&subscription_id=\(subscriptionID)&since=&until=",
                     [eventID, #"<option value="phone.changed" selected>"#, #"value="\#(subscriptionID)""#]),
                    ("/console/events?status=rejected&type=&reason=", ["No events match"]),
                    ("/console/users?user_id=u-pages", []),
                    ("/console/users/u-pages", ["+15550001111", "phone.changed", eventID, named,
                                                "/console/replays/new?user_id=u-pages"]),
                    ("/console/events/\(eventID)", ["provider_confirmed", "+15550001111", #"title="\#(subscriptionID)">127.0.0.1</span>"#,
                                                     "200", "Review replay"]),
                    ("/console/replays/new", ["Count matches"]),
                    ("/console/replays/new?user_id=u-pages", [#"name="user_id" value="u-pages""#]),
                    ("/console/dead-letters", ["No dead letters.</p>"]),
                    ("/console/subscriptions", [#"<tr><td><a href="/console/subscriptions/\#(subscriptionID)">127.0.0.1</a><br>"#, "healthy"]),
                ]
                for (path, texts) in pages {
                    let page = try await support.get(path)
                    #expect(page.status == (path.hasPrefix("/console/users?") ? 303 : 200), "\(path)")
                    #expect(page.headers["Content-Security-Policy"] == [Self.policy], "\(path)")
                    for text in texts { #expect(page.text.contains(text), "\(path) shows \(text)") }
                    #expect(!page.text.contains("<script"), "\(path)")
                }
                #expect(try await support.get("/console/events/evt_nope").status == 404)
                #expect(try await support.get("/console/replays/rpl_nope").status == 404)
                #expect(try await support.get("/console/users/u-pages?cursor=x").status == 400)
                #expect(try await support.get("/console/events?since=yesterday").status == 400)
                #expect(try await support.get("/console/events?cursor=12").status == 400)
                #expect(try await support.get("/console/audit").status == 403, "the audit log is for admins")

                let admin = ConsoleBrowser(port: f.server.http.port)
                try await admin.signIn(token: LiveServer.adminToken)
                let audit = try await admin.get("/console/audit")
                #expect(audit.status == 200 && audit.text.contains("<h1>Audit log</h1>"))
                #expect(audit.text.contains(#"<td class="nowrap"><code>subscription.create</code>"#), "an action is one word, never broken")
            }
        }
    }

    /// The one search box takes what support is given: a webhook-id a backend received, an
    /// event id, or a user id.
    @Test func theSearchBoxFindsAWebhookIDAnEventIDOrAUserID() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                let event = try await f.pushVerified("token.rotated", userID: "u-search", session: try f.session("u-search"))
                let eventID = try #require(event["id"] as? String)
                let delivery = try #require(try await f.finalDeliveries(of: eventID, count: 1).first)
                let webhookID = try #require(delivery["webhook_id"] as? String)
                let support = ConsoleBrowser(port: f.server.http.port)
                try await support.signIn(token: try await SubscriptionsAPITests.token("support", "Sam", f.server))

                let home = try await support.get("/console")
                #expect(home.text.contains(#"action="/console/search""#) && home.text.contains("webhook-id"))
                let anchor = "delivery-" + webhookID
                let byWebhook = try await support.get("/console/search?q=\(webhookID)")
                #expect(byWebhook.status == 303 && byWebhook.headers["Location"] == ["/console/events/\(eventID)#\(anchor)"])
                #expect(try await support.get("/console/events/\(eventID)").text.contains(#"id="\#(anchor)""#), "the page has the anchor")
                let byEvent = try await support.get("/console/search?q=\(eventID)")
                #expect(byEvent.status == 303 && byEvent.headers["Location"] == ["/console/events/\(eventID)"])
                let byUser = try await support.get("/console/search?q=%20u-search%20")
                #expect(byUser.status == 303 && byUser.headers["Location"] == ["/console/users/u-search"])
                let unknownWebhook = try await support.get("/console/search?q=msg_00000000000000000000000000")
                #expect(unknownWebhook.status == 303, "a msg_ id nothing carried is taken as a user id, whose timeline says it is empty")
                #expect(try await support.get("/console/search?q=").status == 422)

                // A deleted subscription keeps its id on the event's page, marked deleted.
                let subscriptionID = try #require(subscription["id"] as? String)
                #expect(try await f.server.http.send(.DELETE, "/v1/subscriptions/\(subscriptionID)",
                                                     headers: [("Authorization", "Bearer \(LiveServer.adminToken)")]).status == 204)
                #expect(try await support.get("/console/events/\(eventID)").text.contains("\(subscriptionID) (deleted)"))
            }
        }
    }

    @Test func replayingAnEventNeedsTheSessionsCSRFTokenAReasonAndAConfirmation() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let subscriptionID = try #require(subscription["id"] as? String)
                let event = try await f.pushVerified("token.rotated", userID: "u-replay", session: try f.session("u-replay"))
                let eventID = try #require(event["id"] as? String)
                try await subscriber.waitForDeliveries(count: 1, within: .seconds(20))
                let browser = ConsoleBrowser(port: f.server.http.port)
                try await browser.signIn(token: try await SubscriptionsAPITests.token("support", "Sam", f.server))
                let csrf = try await browser.formToken()
                let path = "/console/events/\(eventID)/replay"
                let fields = [("subscriptions_listed", "1"), ("subscription_ids", subscriptionID), ("reason", "backend lost its session table")]

                #expect(try await browser.post(path, fields + [("confirm", "yes")]).status == 403, "no CSRF token")
                #expect(try await browser.post(path, fields + [("confirm", "yes"), ("csrf", "forged")]).status == 403)
                let noReason = try await browser.post(path, [("csrf", csrf), ("subscriptions_listed", "1"), ("subscription_ids", subscriptionID)])
                #expect(noReason.status == 422 && noReason.text.contains("<code>reason</code>"))
                let noTarget = try await browser.post(path, [("csrf", csrf), ("subscriptions_listed", "1"), ("reason", "r")])
                #expect(noTarget.status == 422 && noTarget.text.contains("<code>subscription_ids</code>"))

                let review = try await browser.post(path, fields + [("csrf", csrf)])
                #expect(review.status == 200 && review.text.contains("Replay now") && review.text.contains("backend lost its session table"))
                #expect(try await Self.auditActions(f).isEmpty, "reviewing changes nothing")

                let confirmed = try await browser.post(path, fields + [("csrf", csrf), ("confirm", "yes")])
                #expect(confirmed.status == 303)
                let location = try #require(confirmed.headers["Location"].first)
                #expect(location.hasPrefix("/console/events/\(eventID)?replayed=rpl_"))
                let page = try await browser.get(location)
                #expect(page.text.contains("queued: 1 delivery will be sent again"))
                let replayed = try await subscriber.waitForDeliveries(count: 2, within: .seconds(20))
                #expect(replayed.last?.object?["replay"] != nil)
                #expect(try await Self.auditActions(f) == ["event.replay by Sam: backend lost its session table"])
            }
        }
    }

    @Test func aBulkReplayShowsItsCountBeforeItRunsThenItsProgress() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let session = try f.session("u-bulk")
                try await f.pushVerified("token.rotated", userID: "u-bulk", session: session)
                try await f.pushVerified("token.rotated", userID: "u-bulk", session: session)
                try await subscriber.waitForDeliveries(count: 2, within: .seconds(20))
                try await SupportAPITests.waitUntilRecorded(f.server, count: 2)
                let browser = ConsoleBrowser(port: f.server.http.port)
                try await browser.signIn(token: LiveServer.adminToken)
                let csrf = try await browser.formToken()

                let bad = try await browser.post("/console/replays", [("csrf", csrf), ("reason", "r"), ("since", "yesterday")])
                #expect(bad.status == 422 && bad.text.contains("<code>since</code>") && bad.text.contains("value=\"yesterday\""))
                let nothing = try await browser.post("/console/replays", [("csrf", csrf), ("reason", "r"), ("user_id", "u-nobody")])
                #expect(nothing.status == 200 && nothing.text.contains("nothing to replay"))

                let fields = [("user_id", "u-bulk"), ("types", "token.rotated"), ("reason", "subscriber restored from backup")]
                let review = try await browser.post("/console/replays", fields + [("csrf", csrf)])
                #expect(review.status == 200 && review.text.contains("Replay 2 deliveries?"))
                #expect(try await Self.auditActions(f).isEmpty, "the count is a dry run")
                let started = try await browser.post("/console/replays", fields + [("csrf", csrf), ("confirm", "yes")])
                let location = try #require(started.headers["Location"].first)
                #expect(started.status == 303 && location.hasPrefix("/console/replays/rpl_"))
                try await subscriber.waitForDeliveries(count: 4, within: .seconds(20))
                let progress = try await browser.get(location)
                #expect(progress.status == 200 && progress.text.contains("<dt>Matched</dt><dd>2</dd>"))
                #expect(try await Self.auditActions(f) == ["replay.start by ECHORELAY_ADMIN_TOKEN: subscriber restored from backup"])
            }
        }
    }

    @Test func deadLettersAreListedAndRedrivenAfterTheirCountIsConfirmed() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.script(Array(repeating: .status(500, body: "down for maintenance"), count: 3))  // every try of the schedule
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let subscriptionID = try #require(subscription["id"] as? String)
                let event = try await f.pushVerified("token.rotated", userID: "u-dead", session: try f.session("u-dead"))
                let eventID = try #require(event["id"] as? String)
                #expect(try await f.finalDeliveries(of: eventID, count: 1).first?["status"] as? String == "dead")
                let browser = ConsoleBrowser(port: f.server.http.port)
                try await browser.signIn(token: try await SubscriptionsAPITests.token("support", "Sam", f.server))
                let csrf = try await browser.formToken()

                let list = try await browser.get("/console/dead-letters?subscription_id=\(subscriptionID)")
                #expect(list.status == 200 && list.text.contains(eventID) && list.text.contains("<td>500 "))
                let fields = [("subscription_id", subscriptionID), ("reason", "backend is back")]
                #expect(try await browser.post("/console/dead-letters/redrive", fields + [("confirm", "yes")]).status == 403, "no CSRF token")
                let review = try await browser.post("/console/dead-letters/redrive", fields + [("csrf", csrf)])
                #expect(review.status == 200 && review.text.contains("Redrive 1 dead letter?"))
                #expect(try await Self.auditActions(f).isEmpty, "the count changes nothing")
                let redriven = try await browser.post("/console/dead-letters/redrive", fields + [("csrf", csrf), ("confirm", "yes")])
                #expect(redriven.status == 303)
                #expect(redriven.headers["Location"].first == "/console/dead-letters?subscription_id=\(subscriptionID)&redriven=1")
                try await subscriber.waitForDeliveries(count: 4, within: .seconds(20))
                #expect(try await f.finalDeliveries(of: eventID, count: 1).first?["status"] as? String == "delivered")
                #expect(try await Self.auditActions(f) == ["dead_letters.redrive by Sam: backend is back"])
            }
        }
    }

    @Test func valuesFromOutsideAreEscapedOnEveryPage() async throws {
        let hostile = #"<script>alert("x")</script>'&"#
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.script([.status(500, body: hostile)])
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let userID = #"u<b>"'&"#
                let event = try await f.pushVerified("token.rotated", userID: userID, session: try f.session(userID))
                let eventID = try #require(event["id"] as? String)
                try await subscriber.waitForDeliveries(count: 2, within: .seconds(20))  // a 500, then the retry's 200
                let browser = ConsoleBrowser(port: f.server.http.port)
                try await browser.signIn(token: LiveServer.adminToken)
                let csrf = try await browser.formToken()
                let replayed = try await browser.post("/console/events/\(eventID)/replay", [("csrf", csrf), ("reason", hostile), ("confirm", "yes")])
                #expect(replayed.status == 303)
                let refused = try await browser.post("/console/replays", [("csrf", csrf), ("reason", hostile), ("user_id", hostile + String(repeating: "x", count: 64))])
                #expect(refused.status == 422)

                let pages = [ConsolePath.user(userID), ConsolePath.event(eventID), "/console/audit", "/console/users?user_id=%3Cscript%3E"]
                for page in [refused] + (try await pages.asyncMap { try await browser.get($0) }) {
                    #expect(!page.text.contains("<script>") && !page.text.contains("<b>"), "\(page.text.prefix(200))")
                }
                #expect(try await browser.get(ConsolePath.event(eventID)).text.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;"),
                        "the subscriber's answer is shown, escaped")
                #expect(try await browser.get("/console/audit").text.contains("&lt;script&gt;"), "the reason is shown, escaped")
                #expect(try await browser.get(ConsolePath.user(userID)).text.contains("u&lt;b&gt;&quot;&#39;&amp;"))
            }
        }
    }

    /// The replays and redrives in the audit log, through the API, as "action by actor: reason".
    static func auditActions(_ f: EchoFixture) async throws -> [String] {
        let entries = try await f.server.http.get("/v1/audit", bearer: LiveServer.adminToken).json?["entries"] as? [[String: Any]] ?? []
        let actions = entries.filter { entry in
            let action = entry["action"] as? String ?? ""
            return action.contains("replay") || action.contains("redrive")
        }
        return actions.map { entry in
            "\(entry["action"] ?? "") by \((entry["actor"] as? [String: Any])?["name"] ?? ""): \(entry["reason"] ?? "")"
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
