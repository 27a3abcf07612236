import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// The console acts on a subscription as the API does: enable, disable, a test delivery, a
/// new signing secret (shown once) and a recover, each behind a confirmation, with a reason
/// that reaches the audit log, and only with the session's CSRF token. On both stores.
@Suite struct ConsoleSubscriptionActionsTests {
    static let stores: [StoreKind] = [.postgres, .sqlite]

    @Test(arguments: stores)
    func everyActionIsConfirmedAuditedWithItsReasonAndNeedsTheFormToken(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let list = try #require(try await f.http.get("/v1/subscriptions", bearer: LiveServer.adminToken).json?["subscriptions"] as? [[String: Any]])
            let id = try #require(list.first?["id"] as? String)
            let page = "/console/subscriptions/\(id)"
            let admin = ConsoleBrowser(port: f.http.port)
            try await admin.signIn(token: LiveServer.adminToken)
            #expect(try await admin.get("/console/subscriptions").text.contains(#"href="\#(page)""#), "the list links to each")
            let shown = try await admin.get(page)
            #expect(shown.status == 200)
            for action in ["disable", "test", "rotate-secret", "recover"] {
                #expect(shown.text.contains(#"action="\#(page)/\#(action)""#), "\(action) is offered")
            }
            let csrf = try await admin.formToken()
            func audit(_ action: String) async throws -> [[String: Any]] {
                try await f.http.get("/v1/audit?action=\(action)&target=\(id)", bearer: LiveServer.adminToken).json?["entries"] as? [[String: Any]] ?? []
            }
            func enabled() async throws -> Bool? {
                try await f.http.get("/v1/subscriptions/\(id)", bearer: LiveServer.adminToken).json?["enabled"] as? Bool
            }

            // Refused without the form token or a reason; asked to confirm before anything changes.
            #expect(try await admin.post("\(page)/disable", [("csrf", "forged"), ("reason", "maintenance")]).status == 403)
            #expect(try await admin.post("\(page)/disable", [("csrf", csrf), ("reason", " ")]).status == 422)
            let confirm = try await admin.post("\(page)/disable", [("csrf", csrf), ("reason", "backend maintenance")])
            #expect(confirm.status == 200 && confirm.text.contains(#"name="confirm" value="yes""#) && confirm.text.contains("backend maintenance"))
            #expect(try await enabled() == true, "nothing changed before the confirmation")

            let disabled = try await admin.post("\(page)/disable", [("csrf", csrf), ("reason", "backend maintenance"), ("confirm", "yes")])
            #expect(disabled.status == 303)
            #expect(try await enabled() == false)
            #expect(try await audit("subscription.disable").first?["reason"] as? String == "backend maintenance")
            #expect(try await admin.get(page).text.contains(#"action="\#(page)/enable""#))
            #expect(try await admin.post("\(page)/enable", [("csrf", csrf), ("reason", "back up"), ("confirm", "yes")]).status == 303)
            #expect(try await enabled() == true)
            #expect(try await audit("subscription.enable").first?["reason"] as? String == "back up")

            // A test delivery reaches the subscriber now, and the page says what it answered.
            let before = f.subscriber.deliveries.count
            let tested = try await admin.post("\(page)/test", [("csrf", csrf), ("reason", "ticket 77"), ("confirm", "yes")])
            #expect(tested.status == 303)
            let after = try await admin.get(try #require(tested.headers["Location"].first))
            #expect(after.text.contains("delivered: the backend answered 200"), "\(after.text)")
            #expect(f.subscriber.deliveries.count == before + 1)
            #expect(try await audit("subscription.test").first?["reason"] as? String == "ticket 77")

            // A new secret, shown once; deliveries are signed with it from then on.
            let rotated = try await admin.post("\(page)/rotate-secret", [("csrf", csrf), ("reason", "leaked in a log"), ("confirm", "yes")])
            #expect(rotated.status == 200 && rotated.headers["Cache-Control"] == ["no-store"])
            let secret = try #require(rotated.text.firstMatch(of: /whsec_[A-Za-z0-9+\/=]+/).map { String($0.0) })
            #expect(!(try await admin.get(page).text.contains(secret)), "shown only once")
            #expect(try await audit("subscription.rotate_secret").first?["reason"] as? String == "leaked in a log")
            _ = try await admin.post("\(page)/test", [("csrf", csrf), ("reason", "check the new secret"), ("confirm", "yes")])
            f.subscriber.setSecrets([secret])
            _ = try await admin.post("\(page)/test", [("csrf", csrf), ("reason", "signed with the new secret"), ("confirm", "yes")])
            #expect(f.subscriber.deliveries.last?.signedBy.contains(secret) == true)

            // A recover says how many it will send, then starts a replay; with nothing missed, says so.
            let token = try await f.session("console-recover")
            let event = try await f.pushed("token.rotated", userID: "console-recover", token: token)
            _ = try await f.deliveries(of: try #require(event["id"] as? String))
            let window = [("csrf", csrf), ("reason", "they lost a day"), ("since", "2020-01-01T00:00:00Z")]
            #expect(try await admin.post("\(page)/recover", window).text.contains("Nothing to recover"))
            let late = try #require(try await f.http.send(.POST, "/v1/subscriptions", headers: [
                ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
            ], body: Array(#"{"url": "\#(f.subscriber.url("/late"))", "event_types": ["token.rotated"]}"#.utf8)).json?["id"] as? String)
            let latePage = "/console/subscriptions/\(late)"
            #expect(try await admin.post("\(latePage)/recover", window).text.contains("Nothing to recover"),
                    "without asking, only what arrived since it was created")
            let count = try await admin.post("\(latePage)/recover", window + [("before_creation", "yes")])
            #expect(count.status == 200 && count.text.contains("1 event it never received"), "\(count.text)")
            let recovered = try await admin.post("\(latePage)/recover", window + [("before_creation", "yes"), ("confirm", "yes")])
            #expect(recovered.status == 303 && recovered.headers["Location"].first?.hasPrefix("/console/replays/rpl_") == true)
            #expect(try await admin.post("\(latePage)/recover", [("csrf", csrf), ("reason", "r"), ("since", "yesterday")]).status == 422)

            // Support may test and recover, but not disable or rotate.
            let supportToken = try #require(try await f.http.send(.POST, "/v1/tokens", headers: [
                ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
            ], body: Array(#"{"role": "support", "name": "Robin"}"#.utf8)).json?["token"] as? String)
            let support = ConsoleBrowser(port: f.http.port)
            try await support.signIn(token: supportToken)
            let supportPage = try await support.get(page)
            #expect(supportPage.text.contains("\(page)/test") && !supportPage.text.contains("\(page)/disable"))
            #expect(try await support.post("\(page)/disable", [("csrf", try await support.formToken()), ("reason", "x"), ("confirm", "yes")]).status == 403)
            #expect(try await enabled() == true)
        }
    }
}

/// An app team's portal: its `app` token signs in to the console and finds its own
/// subscriptions, their deliveries and attempts, a test, a recover and a new secret; every
/// other page and every other subscription is `404`, as in the API. On both stores.
@Suite struct ConsoleAppPortalTests {
    @Test(arguments: ConsoleSubscriptionActionsTests.stores)
    func anAppTeamSeesOnlyItsOwnSubscriptionsAndEverythingElseIsNotFound(store: StoreKind) async throws {
        try await OAuth2Fixture.run(store) { f in
            let admin = [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")]
            let others = try #require(try await f.http.get("/v1/subscriptions", bearer: LiveServer.adminToken).json?["subscriptions"] as? [[String: Any]])
            let otherID = try #require(others.first?["id"] as? String)
            let app = try #require(try await f.http.send(.POST, "/v1/tokens", headers: admin,
                                                         body: Array(#"{"role": "app", "name": "billing"}"#.utf8)).json?["token"] as? String)
            let own = try #require(try await f.http.send(.POST, "/v1/subscriptions", headers: [
                ("Authorization", "Bearer \(app)"), ("Content-Type", "application/json"),
            ], body: Array(#"{"url": "\#(f.subscriber.url("/billing"))", "event_types": ["token.rotated"], "description": "billing"}"#.utf8)).json)
            let ownID = try #require(own["id"] as? String)
            let session = try await f.session("portal-1")
            let event = try await f.pushed("token.rotated", userID: "portal-1", token: session)
            _ = try await f.deliveries(of: try #require(event["id"] as? String), count: 2)

            let portal = ConsoleBrowser(port: f.http.port)
            let signedIn = try await portal.signIn(token: app)
            #expect(signedIn.status == 303 && signedIn.headers["Location"] == ["/console/subscriptions"])
            let list = try await portal.get("/console/subscriptions")
            #expect(list.status == 200 && list.text.contains(ownID) && !list.text.contains(otherID), "only its own")
            #expect(list.text.contains("Your subscriptions") && !list.text.contains("/console/audit"), "its own menu")
            #expect(try await portal.get("/console").headers["Location"] == ["/console/subscriptions"])

            let page = "/console/subscriptions/\(ownID)"
            let mine = try await portal.get(page)
            #expect(mine.status == 200)
            for action in ["test", "recover", "rotate-secret"] { #expect(mine.text.contains("\(page)/\(action)"), "\(action)") }
            #expect(!mine.text.contains("\(page)/disable"))

            // Its deliveries and their attempts.
            var deliveries = try await portal.get("\(page)/deliveries")
            let deadline = ContinuousClock.now + .seconds(20)
            while !deliveries.text.contains("delivered"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                deliveries = try await portal.get("\(page)/deliveries")
            }
            #expect(deliveries.status == 200 && deliveries.text.contains("portal-1") && deliveries.text.contains("delivered"), "\(deliveries.text)")
            let attemptsLink = try #require(deliveries.text.firstMatch(of: /href="(\/console\/subscriptions\/[^"]+\/deliveries\/[0-9]+)"/).map { String($0.1) })
            let attempts = try await portal.get(attemptsLink)
            #expect(attempts.status == 200 && attempts.text.contains("<td>200</td>"), "\(attempts.text)")

            // Its actions.
            let csrf = try ConsoleBrowser.hiddenField("csrf", in: mine.text)
            let tested = try await portal.post("\(page)/test", [("csrf", csrf), ("reason", "does our endpoint work?"), ("confirm", "yes")])
            #expect(tested.status == 303)
            let rotated = try await portal.post("\(page)/rotate-secret", [("csrf", csrf), ("reason", "rotating"), ("confirm", "yes")])
            #expect(rotated.status == 200 && rotated.text.contains("whsec_"))
            let recover = try await portal.post("\(page)/recover", [("csrf", csrf), ("reason", "we were down"), ("since", "2020-01-01T00:00:00Z")])
            #expect(recover.status == 200 && recover.text.contains("Nothing to recover"), "\(recover.text)")
            #expect(try await portal.post("\(page)/disable", [("csrf", csrf), ("reason", "no"), ("confirm", "yes")]).status == 404)

            // Everything else does not exist for it.
            for path in ["/console/subscriptions/\(otherID)", "/console/subscriptions/\(otherID)/deliveries", "/console/events",
                         "/console/users/portal-1", "/console/events/\(event["id"] as? String ?? "")", "/console/audit",
                         "/console/dead-letters", "/console/replays/new", "/console/shared-signals", "/console/search?q=portal-1"] {
                #expect(try await portal.get(path).status == 404, "\(path)")
            }
            for path in ["/console/subscriptions/\(otherID)/test", "/console/events/\(event["id"] as? String ?? "")/replay",
                         "/console/dead-letters/redrive"] {
                #expect(try await portal.post(path, [("csrf", csrf), ("reason", "r"), ("confirm", "yes")]).status == 404, "\(path)")
            }
        }
    }
}
