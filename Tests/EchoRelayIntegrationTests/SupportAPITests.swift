import EchoRelayCore
import EchoRelayServer
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// The support API against a live server, a real database, the stand-in provider and a
/// stand-in subscriber: timelines, replays, dead letters, re-verification and the audit log.
@Suite struct SupportAPITests {
    static func send(_ server: LiveServer, _ method: HTTPMethod, _ path: String, token: String = LiveServer.adminToken,
                     body: [String: Any]? = nil) async throws -> TestHTTPResponse {
        try await server.http.send(
            method, path, headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
            body: try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) }
        )
    }

    static func errorFields(_ response: TestHTTPResponse) -> [String] {
        (response.json?["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
    }

    /// A subscriber that checks signatures with the new subscription's secret.
    static func subscribe(_ f: EchoFixture, _ subscriber: StandInSubscriber, ordered: Bool = true) async throws -> String {
        let subscription = try await f.subscribe(url: subscriber.url(), ordered: ordered)
        subscriber.setSecrets([try #require(subscription["secret"] as? String)])
        return try #require(subscription["id"] as? String)
    }

    /// Polls `GET /v1/replays/{id}` until `done` holds for it.
    static func waitForReplay(_ server: LiveServer, _ id: String, within limit: Duration = .seconds(30),
                              until done: ([String: Any]) -> Bool = { $0["state"] as? String != "running" }) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + limit
        while true {
            let replay = try #require(try await send(server, .GET, "/v1/replays/\(id)").json)
            if done(replay) { return replay }
            guard ContinuousClock.now < deadline else { throw TestSetupError("replay \(id) did not finish: \(replay)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Waits until the server has recorded `count` delivered deliveries: a subscriber may have
    /// an update a moment before the server has written down its answer.
    static func waitUntilRecorded(_ server: LiveServer, count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let dryRun = try await send(server, .POST, "/v1/replays", body: ["reason": "count", "status": "delivered", "dry_run": true])
            if dryRun.json?["matched"] as? Int == count { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSetupError("the server did not record \(count) deliveries")
    }

    @Test func supportAndAdminReadAndActAppTokensAreRefusedAndOnlyAdminsReadTheAudit() async throws {
        try await LiveServer.run { server in
            let support = try await SubscriptionsAPITests.token("support", "Sam from support", server)
            let app = try await SubscriptionsAPITests.token("app", "billing backend", server)
            let event = eventBody(userID: "u-roles")
            #expect(try await server.ingest(event).status == 202)
            let eventID = try #require((try JSONSerialization.jsonObject(with: Data(event)) as? [String: Any])?["id"] as? String)

            let reads = ["/v1/users/u-roles/events", "/v1/events/\(eventID)", "/v1/dead-letters", "/v1/replays/rpl_unknown"]
            for path in reads {
                let bySupport = try await Self.send(server, .GET, path, token: support).status
                #expect(bySupport == (path.hasPrefix("/v1/replays") ? 404 : 200), "support GET \(path)")
                // An app token may follow its own recovers, so any other replay is 404 to it, not 403.
                #expect(try await Self.send(server, .GET, path, token: app).status == (path.hasPrefix("/v1/replays") ? 404 : 403),
                        "app GET \(path)")
                #expect(try await server.http.get(path).status == 401, "anonymous GET \(path)")
            }
            let actions: [(String, [String: Any])] = [
                ("/v1/events/\(eventID)/replay", ["reason": "r"]), ("/v1/replays", ["reason": "r", "dry_run": true]),
                ("/v1/dead-letters/redrive", ["reason": "r", "dry_run": true]),
            ]
            for (path, body) in actions {
                #expect(try await Self.send(server, .POST, path, token: app, body: body).status == 403, "app POST \(path)")
                #expect(try await server.http.send(.POST, path).status == 401, "anonymous POST \(path)")
            }
            #expect(try await Self.send(server, .POST, "/v1/replays", token: support, body: ["reason": "r", "dry_run": true]).status == 200)
            let audit = try await Self.send(server, .GET, "/v1/audit", token: support)
            #expect(audit.status == 403)
            #expect(audit.json?["detail"] as? String == "this needs the admin role; the token has the support role")
            #expect(try await Self.send(server, .GET, "/v1/audit").status == 200)
        }
    }

    @Test func aTimelineListsAUsersEventsNewestFirstWithFiltersAndPages() async throws {
        try await LiveServer.run { server in
            let start = Date()
            var ids: [String] = []
            for index in 0..<5 {
                let type = index == 2 ? "account.deactivated" : "token.rotated"
                let id = "evt_timeline_\(index)"
                #expect(try await server.ingest(eventBody(id: id, type: type, userID: "u-timeline")).status == 202)
                ids.append(id)
            }
            #expect(try await server.ingest(eventBody(userID: "someone-else")).status == 202)

            let all = try #require(try await Self.send(server, .GET, "/v1/users/u-timeline/events").json)
            let events = try #require(all["events"] as? [[String: Any]])
            #expect(events.map { $0["sequence"] as? Int } == [5, 4, 3, 2, 1])
            #expect(events.map { $0["id"] as? String } == ids.reversed())
            #expect(all["next_cursor"] is NSNull)
            let first = events[0]
            #expect(first["status"] as? String == "pending")
            #expect(first["user_id"] as? String == "u-timeline")
            #expect(first["received_at"] is String && first["occurred_at"] is String)
            #expect(first["deliveries"] as? [String: Int] == ["total": 0, "pending": 0, "delivered": 0, "dead": 0, "cancelled": 0, "replays": 0])

            // Pages of two, following next_cursor, give the same events once each.
            var paged: [Int] = []
            var cursor: String?
            repeat {
                let page = try #require(try await Self.send(
                    server, .GET, "/v1/users/u-timeline/events?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                ).json)
                paged += (page["events"] as? [[String: Any]] ?? []).compactMap { $0["sequence"] as? Int }
                cursor = page["next_cursor"] as? String
            } while cursor != nil
            #expect(paged == [5, 4, 3, 2, 1])

            let deactivations = try await Self.send(server, .GET, "/v1/users/u-timeline/events?type=account.deactivated").json
            #expect((deactivations?["events"] as? [[String: Any]])?.map { $0["sequence"] as? Int } == [3])
            let both = try await Self.send(server, .GET, "/v1/users/u-timeline/events?type=account.deactivated,token.rotated&status=pending").json
            #expect((both?["events"] as? [[String: Any]])?.count == 5)
            let verified = try await Self.send(server, .GET, "/v1/users/u-timeline/events?status=verified").json
            #expect((verified?["events"] as? [[String: Any]])?.isEmpty == true)
            let since = RFC3339.format(start.addingTimeInterval(-60))
            let until = RFC3339.format(start.addingTimeInterval(-30))
            let before = try await Self.send(server, .GET, "/v1/users/u-timeline/events?since=\(since)&until=\(until)").json
            #expect((before?["events"] as? [[String: Any]])?.isEmpty == true)
            let after = try await Self.send(server, .GET, "/v1/users/u-timeline/events?since=\(since)").json
            #expect((after?["events"] as? [[String: Any]])?.count == 5)
            let nobody = try await Self.send(server, .GET, "/v1/users/nobody/events")
            #expect(nobody.status == 200 && (nobody.json?["events"] as? [Any])?.isEmpty == true)

            // The user id is the path segment, percent-decoded: any printable id works.
            #expect(try await server.ingest(eventBody(userID: "team/48151623é")).status == 202)
            let encoded = try await Self.send(server, .GET, "/v1/users/team%2F48151623%C3%A9/events").json
            #expect((encoded?["events"] as? [[String: Any]])?.map { $0["user_id"] as? String } == ["team/48151623é"])

            let bad = try await Self.send(server, .GET, "/v1/users/u-timeline/events?type=token.stolen&since=yesterday&limit=0&cursor=x")
            #expect(bad.status == 400)
            #expect(Set(Self.errorFields(bad)) == ["type", "since", "limit", "cursor"])
        }
    }

    @Test func aReplayArrivesWithTheSameWebhookIDMarkedAsAReplayInTheSignedBody() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscriptionID = try await Self.subscribe(f, subscriber)
                let event = try await f.pushVerified("token.rotated", userID: "u-replay", session: try f.session("u-replay"))
                let eventID = try #require(event["id"] as? String)
                let original = try #require(try await subscriber.waitForDeliveries(count: 1, within: .seconds(30)).first)
                #expect(original.object?["replay"] == nil)

                let answer = try await Self.send(f.server, .POST, "/v1/events/\(eventID)/replay",
                                                 body: ["reason": "backend restored from a backup"])
                #expect(answer.status == 202)
                let replayID = try #require(answer.json?["id"] as? String)
                #expect(replayID.hasPrefix("rpl_"))
                #expect(answer.json?["matched"] as? Int == 1)
                #expect(answer.json?["subscription_ids"] as? [String] == [subscriptionID])

                let received = try await subscriber.waitForDeliveries(count: 2, within: .seconds(30))
                let replayed = received[1]
                #expect(replayed.webhookID == original.webhookID)
                #expect(replayed.signatureValid)
                let marker = try #require(replayed.object?["replay"]?.objectValue)
                #expect(marker["id"]?.stringValue == replayID)
                #expect(marker["at"]?.stringValue.flatMap(RFC3339.parse) != nil)
                #expect(replayed.object?["event_id"]?.stringValue == eventID)
                #expect(replayed.object?["data"] == original.object?["data"])

                // The event shows both deliveries, the replay marked with its id.
                let deliveries = try await f.finalDeliveries(of: eventID, count: 2)
                #expect(deliveries.map { $0["replay_id"] as? String } == [nil, replayID])
                #expect(deliveries.allSatisfy { $0["webhook_id"] as? String == original.webhookID })
                let progress = try await Self.waitForReplay(f.server, replayID)
                #expect(progress["state"] as? String == "completed")
                #expect(progress["kind"] as? String == "event")
                #expect(progress["delivered"] as? Int == 1)
            }
        }
    }

    @Test func aReplayIsRefusedWithoutAReasonForAnUnverifiedEventAndForAnUnknownSubscription() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                _ = try await Self.subscribe(f, subscriber)
                let verified = try #require(try await f.pushVerified("token.rotated", userID: "u-refuse", session: try f.session("u-refuse"))["id"] as? String)
                let rejected = try await f.push("token.rotated", userID: "u-refuse",
                                                echo: try f.echo(token: "made-up", tokenSecret: "made-up"))
                #expect(try await f.outcome(of: rejected)["status"] as? String == "rejected")
                _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(30))

                let noReason = try await Self.send(f.server, .POST, "/v1/events/\(verified)/replay", body: [:])
                #expect(noReason.status == 422)
                #expect(Self.errorFields(noReason) == ["reason"])
                let blank = try await Self.send(f.server, .POST, "/v1/events/\(verified)/replay", body: ["reason": "   "])
                #expect(blank.status == 422)
                let typo = try await Self.send(f.server, .POST, "/v1/events/\(verified)/replay", body: ["reason": "r", "subscriptions": ["x"]])
                #expect(typo.status == 422)
                #expect(Self.errorFields(typo) == ["subscriptions"])
                let unknown = try await Self.send(f.server, .POST, "/v1/events/\(verified)/replay",
                                                  body: ["reason": "r", "subscription_ids": ["sub_nope"]])
                #expect(unknown.status == 422)
                #expect(Self.errorFields(unknown) == ["subscription_ids"])
                let notVerified = try await Self.send(f.server, .POST, "/v1/events/\(rejected)/replay", body: ["reason": "r"])
                #expect(notVerified.status == 409)
                #expect(notVerified.json?["type"] as? String == "urn:echorelay:problem:not-verified")
                #expect(try await Self.send(f.server, .POST, "/v1/events/evt_nope/replay", body: ["reason": "r"]).status == 404)

                // Nothing was sent, nothing audited.
                try await Task.sleep(for: .milliseconds(500))
                #expect(subscriber.deliveries.count == 1)
                let audit = try await Self.send(f.server, .GET, "/v1/audit?action=event.replay").json
                #expect((audit?["entries"] as? [Any])?.isEmpty == true)
            }
        }
    }

    @Test func aBulkReplayOfOneUserArrivesCompleteAndInOrderAndItsDryRunChangesNothing() async throws {
        try await EchoFixture.run(delivery: DeliveryConfiguration(
            timeout: .seconds(5), retrySchedule: [.milliseconds(100)], allowPrivateSubscribers: true, replayRate: 4
        )) { f in
            try await StandInSubscriber().run { subscriber in
                _ = try await Self.subscribe(f, subscriber)
                let alice = try f.session("u-bulk-a")
                let bob = try f.session("u-bulk-b")
                for _ in 0..<6 { try await f.pushVerified("token.rotated", userID: "u-bulk-a", session: alice) }
                for _ in 0..<2 { try await f.pushVerified("token.rotated", userID: "u-bulk-b", session: bob) }
                _ = try await subscriber.waitForDeliveries(count: 8, within: .seconds(30))
                try await Self.waitUntilRecorded(f.server, count: 8)
                subscriber.clearDeliveries()
                let deliveriesBefore = try await f.server.database.count("deliveries")

                let dryRun = try await Self.send(f.server, .POST, "/v1/replays",
                                                 body: ["reason": "count first", "user_id": "u-bulk-a", "dry_run": true])
                #expect(dryRun.status == 200)
                #expect(dryRun.json?["matched"] as? Int == 6)
                #expect(dryRun.json?["dry_run"] as? Bool == true)
                #expect(dryRun.json?["id"] == nil)
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await f.server.database.count("deliveries") == deliveriesBefore)
                #expect(try await f.server.database.count("audit_log") == 1, "only the subscription's creation")
                #expect(try await f.server.database.count("replays") == 0)
                #expect(subscriber.deliveries.isEmpty)

                let started = try await Self.send(f.server, .POST, "/v1/replays",
                                                  body: ["reason": "billing lost a day", "user_id": "u-bulk-a"])
                #expect(started.status == 202)
                #expect(started.json?["matched"] as? Int == 6)
                #expect(started.json?["kind"] as? String == "bulk")
                #expect(started.json?["filter"] as? [String: String] == ["user_id": "u-bulk-a"])
                let replayID = try #require(started.json?["id"] as? String)

                let finished = try await Self.waitForReplay(f.server, replayID)
                #expect(finished["state"] as? String == "completed")
                #expect(finished["sent"] as? Int == 6)
                #expect(finished["delivered"] as? Int == 6)
                #expect(finished["failed"] as? Int == 0)
                let received = subscriber.deliveries
                #expect(DeliveryTests.sequences(received, user: "u-bulk-a") == [1, 2, 3, 4, 5, 6])
                #expect(DeliveryTests.sequences(received, user: "u-bulk-b").isEmpty)
                #expect(received.allSatisfy { $0.object?["replay"]?.objectValue?["id"]?.stringValue == replayID && $0.signatureValid })
                // Paced at 4 a second, six sends take more than a second.
                let span = received.last!.receivedAt.timeIntervalSince(received.first!.receivedAt)
                #expect(span >= 1.0, "six replayed deliveries arrived within \(span) s at 4/s")
            }
        }
    }

    @Test func aCancelledBulkReplayStopsSending() async throws {
        try await EchoFixture.run(delivery: DeliveryConfiguration(
            timeout: .seconds(5), retrySchedule: [.milliseconds(100)], allowPrivateSubscribers: true, replayRate: 1
        )) { f in
            try await StandInSubscriber().run { subscriber in
                _ = try await Self.subscribe(f, subscriber)
                let session = try f.session("u-cancel")
                for _ in 0..<6 { try await f.pushVerified("token.rotated", userID: "u-cancel", session: session) }
                _ = try await subscriber.waitForDeliveries(count: 6, within: .seconds(30))
                try await Self.waitUntilRecorded(f.server, count: 6)
                subscriber.clearDeliveries()

                let started = try await Self.send(f.server, .POST, "/v1/replays", body: ["reason": "resend", "user_id": "u-cancel"])
                let replayID = try #require(started.json?["id"] as? String)
                _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(10))
                #expect(try await Self.send(f.server, .POST, "/v1/replays/\(replayID)/cancel", body: [:]).status == 422)
                let cancelled = try await Self.send(f.server, .POST, "/v1/replays/\(replayID)/cancel", body: ["reason": "wrong user"])
                #expect(cancelled.status == 200)
                #expect(cancelled.json?["state"] as? String == "cancelled")
                #expect(cancelled.json?["finished_at"] is String)
                let sentAtCancel = try #require(cancelled.json?["sent"] as? Int)
                #expect(sentAtCancel < 6)

                try await Task.sleep(for: .seconds(2.5))
                #expect(subscriber.deliveries.count <= sentAtCancel)
                #expect(try await Self.send(f.server, .GET, "/v1/replays/\(replayID)").json?["sent"] as? Int == sentAtCancel)
                let again = try await Self.send(f.server, .POST, "/v1/replays/\(replayID)/cancel", body: ["reason": "again"])
                #expect(again.status == 409)
                #expect(again.json?["type"] as? String == "urn:echorelay:problem:replay-finished")
                #expect(try await Self.send(f.server, .POST, "/v1/replays/rpl_nope/cancel", body: ["reason": "r"]).status == 404)
            }
        }
    }

    @Test func deadLettersAreListedAndARedriveSendsThemAgainWithTheirWebhookID() async throws {
        try await EchoFixture.run(delivery: DeliveryConfiguration(
            timeout: .seconds(5), retrySchedule: [.milliseconds(100)], allowPrivateSubscribers: true
        )) { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.defaultAnswer = .status(500, body: "database on fire")
                let subscriptionID = try await Self.subscribe(f, subscriber)
                let eventID = try #require(try await f.pushVerified("phone.changed", userID: "u-dead", phone: "+15555550100",
                                                                   session: try f.session("u-dead", phone: "+15555550100"))["id"] as? String)
                let dead = try await f.finalDeliveries(of: eventID, count: 1)
                #expect(dead.first?["status"] as? String == "dead")
                // Each failed try is recorded: 500 twice, or, on a loaded machine, a timeout
                // or a connection error in place of one of them.
                let failedTries = try #require(dead.first?["attempts"] as? [[String: Any]]).map { $0["status_code"] as? Int }
                #expect(failedTries.count == 2 && !failedTries.contains(200), "\(dead.first?["attempts"] ?? "")")

                let list = try #require(try await Self.send(f.server, .GET, "/v1/dead-letters?subscription_id=\(subscriptionID)").json)
                let letters = try #require(list["dead_letters"] as? [[String: Any]])
                #expect(letters.count == 1)
                #expect(letters.first?["event_id"] as? String == eventID)
                #expect(letters.first?["user_id"] as? String == "u-dead")
                #expect(letters.first?["attempts"] as? Int == 2)
                #expect(letters.first?["last_status_code"] as? Int == failedTries.last ?? nil)
                #expect(letters.first?["dead_at"] is String)
                let other = try await Self.send(f.server, .GET, "/v1/dead-letters?subscription_id=sub_other").json
                #expect((other?["dead_letters"] as? [Any])?.isEmpty == true)

                let dryRun = try await Self.send(f.server, .POST, "/v1/dead-letters/redrive", body: ["reason": "check", "dry_run": true])
                #expect(dryRun.json?["matched"] as? Int == 1)
                #expect((try await f.deliveries(of: eventID)).first?["status"] as? String == "dead")

                subscriber.defaultAnswer = .ok
                let redrive = try await Self.send(f.server, .POST, "/v1/dead-letters/redrive",
                                                  body: ["reason": "database is back", "subscription_id": subscriptionID])
                #expect(redrive.status == 200)
                #expect(redrive.json?["matched"] as? Int == 1)
                let delivered = try await f.finalDeliveries(of: eventID, count: 1)
                #expect(delivered.first?["status"] as? String == "delivered")
                let attempts = try #require(delivered.first?["attempts"] as? [[String: Any]])
                #expect(attempts.map { $0["status_code"] as? Int } == failedTries + [200], "the history stays, the new try is added")
                let received = subscriber.deliveries
                #expect(Set(received.map(\.webhookID)).count == 1)
                #expect(received.last?.object?["replay"] == nil)
                let after = try await Self.send(f.server, .GET, "/v1/dead-letters").json
                #expect((after?["dead_letters"] as? [Any])?.isEmpty == true)
            }
        }
    }

    @Test func anUnverifiableEventIsReverifiedWithFreshEchoCredentials() async throws {
        try await EchoFixture.run(retrySchedule: [.milliseconds(100)]) { f in
            try await StandInSubscriber().run { subscriber in
                _ = try await Self.subscribe(f, subscriber)
                let session = try f.session("u-reverify")
                f.provider.failNext(2)  // the first try and its one retry: unverifiable
                let eventID = try await f.push("token.rotated", userID: "u-reverify",
                                               echo: try f.echo(token: session.token, tokenSecret: session.secret))
                #expect(try await f.outcome(of: eventID)["status"] as? String == "unverifiable")

                let stale = try await Self.send(f.server, .POST, "/v1/events/\(eventID)/reverify",
                                                body: ["reason": "provider is back", "echo": ["service_provider": "not a url"]])
                #expect(stale.status == 422)
                #expect(Set(Self.errorFields(stale)) == ["echo.service_provider", "echo.authorization"])

                let fresh = try f.echo(token: session.token, tokenSecret: session.secret)
                let answer = try await Self.send(f.server, .POST, "/v1/events/\(eventID)/reverify",
                                                 body: ["reason": "provider is back", "echo": fresh])
                #expect(answer.status == 202)
                #expect(try await f.outcome(of: eventID)["status"] as? String == "verified")
                _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(30))
                #expect(try await f.storedEcho(of: eventID) == (nil, nil))

                let again = try await Self.send(f.server, .POST, "/v1/events/\(eventID)/reverify",
                                                body: ["reason": "again", "echo": fresh])
                #expect(again.status == 409)
                let audit = try await Self.send(f.server, .GET, "/v1/audit?action=event.reverify")
                #expect((audit.json?["entries"] as? [[String: Any]])?.first?["target"] as? String == eventID)
                #expect(!audit.text.contains(fresh["authorization"]!), "the echo header never reaches the audit log")
            }
        }
    }

    @Test func theAuditLogRecordsWhoDidWhatWithWhichFilterHowManyAndWhy() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let support = try await SubscriptionsAPITests.token("support", "Sam from support", f.server)
                let subscriptionID = try await Self.subscribe(f, subscriber)
                let eventID = try #require(try await f.pushVerified("token.rotated", userID: "u-audit", session: try f.session("u-audit"))["id"] as? String)
                _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(30))
                try await Self.waitUntilRecorded(f.server, count: 1)

                #expect(try await Self.send(f.server, .POST, "/v1/events/\(eventID)/replay", token: support,
                                            body: ["reason": "ticket 1234: backend lost it"]).status == 202)
                #expect(try await Self.send(f.server, .POST, "/v1/replays", token: support,
                                            body: ["reason": "ticket 1235", "user_id": "u-audit", "types": ["token.rotated"]]).status == 202)

                let audit = try #require(try await Self.send(f.server, .GET, "/v1/audit").json?["entries"] as? [[String: Any]])
                #expect(audit.map { $0["action"] as? String } == ["replay.start", "event.replay", "subscription.create", "token.create"])
                let bulk = audit[0]
                let actor = try #require(bulk["actor"] as? [String: Any])
                #expect(actor["name"] as? String == "Sam from support")
                #expect(actor["role"] as? String == "support")
                #expect((actor["token_id"] as? String)?.hasPrefix("tok_") == true)
                #expect(bulk["reason"] as? String == "ticket 1235")
                #expect(bulk["matched"] as? Int == 1)
                let filter = try #require(bulk["filter"] as? [String: Any])
                #expect(filter["user_id"] as? String == "u-audit")
                #expect(filter["types"] as? [String] == ["token.rotated"])
                #expect(filter.count == 2)
                #expect(audit[1]["target"] as? String == eventID)
                #expect(audit[1]["reason"] as? String == "ticket 1234: backend lost it")
                #expect(audit[1]["matched"] as? Int == 1)
                let created = audit[2]
                #expect(created["target"] as? String == subscriptionID)
                #expect((created["actor"] as? [String: Any])?["name"] as? String == "ECHORELAY_ADMIN_TOKEN")
                let token = audit[3]
                #expect(((token["actor"] as? [String: Any])?["name"] as? String)?.hasPrefix("command line (") == true)
                #expect((token["target"] as? String)?.hasPrefix("tok_") == true)

                let filtered = try await Self.send(f.server, .GET, "/v1/audit?actor=Sam%20from%20support&action=event.replay").json
                #expect((filtered?["entries"] as? [[String: Any]])?.count == 1)
                let paged = try #require(try await Self.send(f.server, .GET, "/v1/audit?limit=2").json)
                #expect((paged["entries"] as? [Any])?.count == 2)
                let cursor = try #require(paged["next_cursor"] as? String)
                let rest = try await Self.send(f.server, .GET, "/v1/audit?limit=2&cursor=\(cursor)").json
                #expect((rest?["entries"] as? [[String: Any]])?.map { $0["action"] as? String } == ["subscription.create", "token.create"])
            }
        }
    }
}
