import EchoRelayCore
import EchoRelayServer
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import PostgresNIO
import Testing
import TestSupport

/// Deliveries to real subscriber servers on loopback, whose signatures are checked by the
/// subscriber's own Standard Webhooks code.
@Suite struct DeliveryTests {
    static func sequences(_ deliveries: [StandInSubscriber.ReceivedDelivery], user: String) -> [Int64] {
        deliveries.compactMap { delivery -> Int64? in
            guard let object = delivery.object, object["user_id"]?.stringValue == user,
                  case .integer(let sequence)? = object["sequence"] else { return nil }
            return sequence
        }
    }

    @Test func aVerifiedUpdateArrivesSignedWithTheProvidersValues() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let session = try f.session("100", phone: "+15555550100")
                try await f.pushVerified("token.rotated", userID: "100", session: session)
                f.provider.addAccount(userID: "100", phoneNumber: "+15555550101")
                let changed = try await f.pushVerified("phone.changed", userID: "100", phone: "+15555550101", session: session)

                let received = try await subscriber.waitForDeliveries(count: 2, within: .seconds(20))
                #expect(received.allSatisfy { $0.signatureValid })
                #expect(received.allSatisfy { $0.userAgent?.hasPrefix("EchoRelay/") == true })
                #expect(received.allSatisfy { $0.contentType == "application/json" })
                let phone = try #require(received.first { $0.object?["type"]?.stringValue == "phone.changed" }?.object)
                #expect(phone["event_id"]?.stringValue == changed["id"] as? String)
                #expect(phone["user_id"]?.stringValue == "100")
                #expect(phone["sequence"] == .integer(2))
                #expect(phone["occurred_at"]?.stringValue == "2026-11-23T10:15:30Z")
                #expect(phone["verified_at"]?.stringValue == changed["verified_at"] as? String)
                let data = try #require(phone["data"]?.objectValue)
                #expect(data["phone_number"]?.stringValue == "+15555550101")
                #expect(data["previous_phone_number"]?.stringValue == "+15555550100")
                // Subscribers learn that a session changed, never its credentials.
                for delivery in received {
                    #expect(!delivery.bodyText.contains(session.token))
                    #expect(!delivery.bodyText.contains(session.secret))
                    #expect(!delivery.bodyText.contains("OAuth"))
                }
                // The webhook-id is the one the event's delivery shows.
                let deliveries = try await f.finalDeliveries(of: changed["id"] as! String, count: 1)
                #expect(deliveries.first?["webhook_id"] as? String == received.first { $0.object?["type"]?.stringValue == "phone.changed" }?.webhookID)
                #expect(deliveries.first?["status"] as? String == "delivered")
                #expect((deliveries.first?["attempts"] as? [[String: Any]])?.first?["status_code"] as? Int == 200)
            }
        }
    }

    @Test func everySubscriptionOfAnEventGetsTheSameBodySignedWithItsOwnSecret() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let first = try #require(try await f.subscribe(url: subscriber.url("/first"))["secret"] as? String)
                let second = try #require(try await f.subscribe(url: subscriber.url("/second"))["secret"] as? String)
                subscriber.setSecrets([first, second])
                try await f.pushVerified("token.rotated", userID: "150", session: try f.session("150"))
                let received = try await subscriber.waitForDeliveries(count: 2, within: .seconds(20))
                let byPath = Dictionary(uniqueKeysWithValues: received.map { ($0.path, $0) })
                let one = try #require(byPath["/first"]), other = try #require(byPath["/second"])
                #expect(one.body == other.body)
                #expect(one.webhookID != other.webhookID)
                #expect(one.signedBy == [first] && other.signedBy == [second])
            }
        }
    }

    /// A lone event to two subscribers: both attempts share one commit (every row carries the
    /// id of the transaction that wrote it), so the event costs the ingest, the outcome and
    /// one write for its deliveries.
    @Test func theAttemptsOfAnEventsDeliveriesThatWentOutTogetherAreWrittenInOneTransaction() async throws {
        // A linger no loaded test machine outlasts (the default, 20 ms, is for production).
        let delivery = DeliveryConfiguration(timeout: .seconds(5), allowPrivateSubscribers: true, siblingLinger: .seconds(10))
        try await EchoFixture.run(delivery: delivery) { f in
            try await StandInSubscriber().run { subscriber in
                _ = try await f.subscribe(url: subscriber.url("/first"))
                _ = try await f.subscribe(url: subscriber.url("/second"))
                let event = try await f.pushVerified("token.rotated", userID: "160", session: try f.session("160"))
                let id = try #require(event["id"] as? String)
                let deliveries = try await f.finalDeliveries(of: id, count: 2)
                #expect(deliveries.allSatisfy { $0["status"] as? String == "delivered" })
                let writers = try await f.server.database.withClient { client in
                    try await client.query("""
                        SELECT DISTINCT a.xmin::text FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
                        WHERE d.event_id = \(id)
                        """).collect().count
                }
                #expect(writers == 1, "both attempts in one transaction")
            }
        }
    }

    @Test func onlyMatchingEnabledSubscriptionsReceiveAnEvent() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                _ = try await f.subscribe(url: subscriber.url("/phones"), types: ["phone.changed"])
                _ = try await f.subscribe(url: subscriber.url("/tokens"), types: ["token.rotated"])
                let disabled = try await f.subscribe(url: subscriber.url("/disabled"), types: ["token.rotated"])
                let id = try #require(disabled["id"] as? String)
                #expect(try await f.server.http.send(.POST, "/v1/subscriptions/\(id)/disable", headers: [("Authorization", "Bearer \(LiveServer.adminToken)")]).status == 200)
                let event = try await f.pushVerified("token.rotated", userID: "200", session: try f.session("200"))
                let deliveries = try await f.finalDeliveries(of: event["id"] as! String, count: 1)
                #expect(deliveries.count == 1)
                #expect(subscriber.deliveries.map(\.path) == ["/tokens"])
            }
        }
    }

    @Test func aFailingSubscriberGetsExactlyTheScheduledTriesThenADeadLetter() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.defaultAnswer = .status(500, body: "down for maintenance")
                _ = try await f.subscribe(url: subscriber.url())
                let event = try await f.pushVerified("token.rotated", userID: "300", session: try f.session("300"))
                let deliveries = try await f.finalDeliveries(of: event["id"] as! String, count: 1)
                #expect(deliveries.first?["status"] as? String == "dead")
                let attempts = try #require(deliveries.first?["attempts"] as? [[String: Any]])
                #expect(attempts.count == 3, "2 delays mean 2 retries, 3 tries")
                #expect(attempts.allSatisfy { $0["status_code"] as? Int == 500 && $0["error_kind"] as? String == "status" })
                #expect(attempts.first?["response_head"] as? String == "down for maintenance")
                try await Task.sleep(for: .milliseconds(300))
                let received = subscriber.deliveries
                #expect(received.count == 3)
                #expect(Set(received.compactMap(\.webhookID)).count == 1, "one webhook-id on every try")
                #expect(Set(received.compactMap(\.webhookTimestamp)).count >= 1)
                #expect(received.allSatisfy { $0.timestampWithinTolerance })
            }
        }
    }

    /// PostgreSQL's text cannot hold U+0000. An answer with a NUL in its first bytes once
    /// made the attempt impossible to record, so the delivery was sent again at every lease.
    @Test func anAnswerWithANULCharacterIsRecordedWithAReplacementCharacter() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.defaultAnswer = .status(200, headers: [("Content-Type", "text/plain")], body: "ok\u{0}done")
                _ = try await f.subscribe(url: subscriber.url())
                let event = try await f.pushVerified("token.rotated", userID: "310", session: try f.session("310"))
                let deliveries = try await f.finalDeliveries(of: event["id"] as! String, count: 1)
                #expect(deliveries.first?["status"] as? String == "delivered")
                let attempts = try #require(deliveries.first?["attempts"] as? [[String: Any]])
                #expect(attempts.map { $0["response_head"] as? String } == ["ok\u{FFFD}done"])
                #expect(subscriber.deliveries.count == 1)
            }
        }
    }

    @Test func goneDeadLettersAndDisablesTheSubscriptionUntilItIsEnabledAgain() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.script([.status(410, body: "gone")])
                let subscription = try await f.subscribe(url: subscriber.url())
                let id = try #require(subscription["id"] as? String)
                let session = try f.session("400")
                let first = try await f.pushVerified("token.rotated", userID: "400", session: session)
                let dead = try await f.finalDeliveries(of: first["id"] as! String, count: 1)
                #expect(dead.first?["status"] as? String == "dead")
                #expect((dead.first?["attempts"] as? [Any])?.count == 1)
                let disabled = try #require(try await f.server.http.get("/v1/subscriptions/\(id)", bearer: LiveServer.adminToken).json)
                #expect(disabled["enabled"] as? Bool == false)
                #expect((disabled["disabled_reason"] as? String)?.contains("410") == true)

                // Verified while disabled: no delivery. Enabled again: deliveries flow.
                _ = try await f.pushVerified("token.rotated", userID: "400", session: session)
                #expect(try await f.server.http.send(.POST, "/v1/subscriptions/\(id)/enable", headers: [("Authorization", "Bearer \(LiveServer.adminToken)")]).json?["enabled"] as? Bool == true)
                let third = try await f.pushVerified("token.rotated", userID: "400", session: session)
                #expect(try await f.finalDeliveries(of: third["id"] as! String, count: 1).first?["status"] as? String == "delivered")
                #expect(subscriber.deliveries.count == 2)
            }
        }
    }

    @Test func retryAfterReplacesTheNextDelayAndCountsAsATry() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.script([.status(429, headers: [("Retry-After", "2")]), .status(503, headers: [("Retry-After", "1")])])
                _ = try await f.subscribe(url: subscriber.url())
                let event = try await f.pushVerified("token.rotated", userID: "500", session: try f.session("500"))
                let deliveries = try await f.finalDeliveries(of: event["id"] as! String, count: 1)
                #expect(deliveries.first?["status"] as? String == "delivered")
                let attempts = try #require(deliveries.first?["attempts"] as? [[String: Any]])
                #expect(attempts.map { $0["status_code"] as? Int } == [429, 503, 200])
                let times = subscriber.deliveries.map(\.receivedAt)
                #expect(times.count == 3)
                // The schedule says 100 ms and 200 ms; Retry-After said 2 s and 1 s.
                #expect(times[1].timeIntervalSince(times[0]) >= 1.9)
                #expect(times[2].timeIntervalSince(times[1]) >= 0.9)
            }
        }
    }

    @Test func aUserWaitingForVerificationHoldsBackOnlyThatUser() async throws {
        // The slow user's retries outlast the wait for the other user's updates (200 × 250 ms).
        try await EchoFixture.run(retrySchedule: Array(repeating: .milliseconds(250), count: 200)) { f in
            try await StandInSubscriber().run { subscriber in
                _ = try await f.subscribe(url: subscriber.url(), ordered: true)
                let slow = try f.session("600")
                let fast = try f.session("601")
                // A's first event keeps failing verification until B's updates are through.
                f.provider.failNext(1000, forToken: slow.token)
                var ids: [String] = []
                ids.append(try await f.push("token.rotated", userID: "600", echo: try f.echo(token: slow.token, tokenSecret: slow.secret)))
                ids.append(try await f.push("token.rotated", userID: "600", echo: try f.echo(token: slow.token, tokenSecret: slow.secret)))
                ids.append(try await f.push("token.rotated", userID: "601", echo: try f.echo(token: fast.token, tokenSecret: fast.secret)))
                ids.append(try await f.push("token.rotated", userID: "601", echo: try f.echo(token: fast.token, tokenSecret: fast.secret)))
                let first: [StandInSubscriber.ReceivedDelivery]
                do {
                    first = try await subscriber.waitForDeliveries(count: 2, within: .seconds(30))
                } catch {
                    // Where the other user's second update stood, to tell a slow machine from a stuck queue.
                    for id in ids[2...] { print("\(id): \(try await f.server.http.get("/v1/events/\(id)", bearer: LiveServer.adminToken).json ?? [:])") }
                    throw error
                }
                #expect(first.compactMap { $0.object?["user_id"]?.stringValue } == ["601", "601"], "the other user flowed while the first waited")
                f.provider.failNext(0, forToken: slow.token)
                let received = try await subscriber.waitForDeliveries(count: 4, within: .seconds(30))
                #expect(Self.sequences(received, user: "600") == [1, 2])
                #expect(Self.sequences(received, user: "601") == [1, 2])
            }
        }
    }

    @Test func perUserOrderHoldsUnderRetriesAndEveryUpdateArrivesOnceTheBackendIsBack() async throws {
        try await EchoFixture.run(delivery: DeliveryConfiguration(
            timeout: .seconds(5), retrySchedule: Array(repeating: .milliseconds(100), count: 10), allowPrivateSubscribers: true
        )) { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.script(Array(repeating: .status(503), count: 6))  // down for a while
                _ = try await f.subscribe(url: subscriber.url(), ordered: true)
                var sessions: [String: (token: String, secret: String)] = [:]
                for user in ["700", "701", "702"] { sessions[user] = try f.session(user) }
                for round in 0..<3 {
                    for user in ["700", "701", "702"] {
                        _ = try await f.push("token.rotated", userID: user, echo: try f.echo(token: sessions[user]!.token, tokenSecret: sessions[user]!.secret), id: "evt_\(user)_\(round)")
                    }
                }
                let all = try await subscriber.waitForDeliveries(count: 15, within: .seconds(30))
                let delivered = all.filter { $0.answer.statusCode == 200 }
                for user in ["700", "701", "702"] {
                    #expect(Self.sequences(delivered, user: user) == [1, 2, 3], "user \(user) got every update once, in order")
                    // No request for a later event went out before the earlier one succeeded.
                    var succeeded: Int64 = 0
                    for delivery in all where delivery.object?["user_id"]?.stringValue == user {
                        guard case .integer(let sequence)? = delivery.object?["sequence"] else { continue }
                        #expect(sequence <= succeeded + 1, "user \(user): sequence \(sequence) sent before \(succeeded + 1) was delivered")
                        if delivery.answer.statusCode == 200 { succeeded = max(succeeded, sequence) }
                    }
                }
            }
        }
    }

    @Test func oneSlowBackendGetsNoMoreThanItsConcurrencyCap() async throws {
        try await EchoFixture.run(delivery: DeliveryConfiguration(
            timeout: .seconds(5), retrySchedule: [.milliseconds(100)], allowPrivateSubscribers: true, perSubscriptionConcurrency: 1
        )) { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.defaultAnswer = .hang(.milliseconds(400))
                _ = try await f.subscribe(url: subscriber.url(), ordered: false)
                for user in ["800", "801", "802", "803"] {
                    try await f.pushVerified("token.rotated", userID: user, session: try f.session(user))
                }
                let received = try await subscriber.waitForDeliveries(count: 4, within: .seconds(30))
                let times = received.map(\.receivedAt).sorted()
                for (earlier, later) in zip(times, times.dropFirst()) {
                    #expect(later.timeIntervalSince(earlier) >= 0.35, "a request started while another was in flight")
                }
            }
        }
    }

    /// A subscriber that never answers, and one that answers at once but never ends its body,
    /// are both recorded as `timeout` after the delivery timeout (1 s here), not held longer.
    @Test(arguments: [StandInSubscriber.Answer.hang(.seconds(120)), .trickle(every: .milliseconds(100))])
    func aSubscriberThatNeverFinishesIsRecordedAsATimeout(answer: StandInSubscriber.Answer) async throws {
        try await EchoFixture.run(delivery: DeliveryConfiguration(
            timeout: .seconds(1), retrySchedule: [.seconds(60)], allowPrivateSubscribers: true
        )) { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.defaultAnswer = answer
                _ = try await f.subscribe(url: subscriber.url())
                let event = try await f.pushVerified("token.rotated", userID: "950", session: try f.session("950"))
                var attempts: [[String: Any]] = []
                let deadline = ContinuousClock.now + .seconds(20)
                while attempts.isEmpty, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    attempts = try await f.deliveries(of: event["id"] as! String).first?["attempts"] as? [[String: Any]] ?? []
                }
                let attempt = try #require(attempts.first, "no attempt recorded while the subscriber was still busy")
                #expect(attempt["error_kind"] as? String == "timeout")
                #expect(attempt["error"] as? String == "no answer within the delivery timeout (ECHORELAY_DELIVERY_TIMEOUT)")
                let duration = try #require(attempt["duration_ms"] as? Int)
                #expect(duration >= 900 && duration < 5_000, "the exchange took \(duration) ms with a 1 s timeout")
                #expect(subscriber.deliveries.count == 1)
            }
        }
    }

    @Test func rotatingTheSecretSignsWithBothForADay() async throws {
        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                let id = try #require(subscription["id"] as? String)
                let old = try #require(subscription["secret"] as? String)
                let rotated = try #require(try await f.server.http.send(.POST, "/v1/subscriptions/\(id)/rotate-secret", headers: [("Authorization", "Bearer \(LiveServer.adminToken)")]).json)
                let new = try #require(rotated["secret"] as? String)
                #expect(new != old && new.hasPrefix("whsec_"))
                #expect(try await f.server.http.get("/v1/subscriptions/\(id)", bearer: LiveServer.adminToken).json?["secret"] == nil)
                subscriber.setSecrets([old, new])
                try await f.pushVerified("token.rotated", userID: "900", session: try f.session("900"))
                let delivery = try #require(try await subscriber.waitForDeliveries(count: 1, within: .seconds(20)).first)
                #expect(delivery.signatures.count == 2)
                #expect(delivery.signedBy == [old, new])
            }
        }
    }

    @Test func deletingASubscriptionCancelsItsPendingDeliveries() async throws {
        try await EchoFixture.run(delivery: DeliveryConfiguration(
            timeout: .seconds(5), retrySchedule: [.seconds(60)], allowPrivateSubscribers: true
        )) { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.defaultAnswer = .status(500)
                let subscription = try await f.subscribe(url: subscriber.url())
                let event = try await f.pushVerified("token.rotated", userID: "1000", session: try f.session("1000"))
                _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(20))
                let id = try #require(subscription["id"] as? String)
                #expect(try await f.server.http.send(.DELETE, "/v1/subscriptions/\(id)", headers: [("Authorization", "Bearer \(LiveServer.adminToken)")]).status == 204)
                #expect(try await f.deliveries(of: event["id"] as! String).first?["status"] as? String == "cancelled")
                #expect(try await f.server.http.get("/v1/subscriptions/\(id)", bearer: LiveServer.adminToken).status == 404)
            }
        }
    }

    @Test func aSubscriptionFailingForLongerThanTheLimitIsDisabled() async throws {
        try await EchoFixture.run(delivery: DeliveryConfiguration(
            timeout: .seconds(5), retrySchedule: Array(repeating: .milliseconds(300), count: 10), disableAfter: .seconds(1),
            allowPrivateSubscribers: true
        )) { f in
            try await StandInSubscriber().run { subscriber in
                subscriber.defaultAnswer = .status(500)
                let subscription = try await f.subscribe(url: subscriber.url())
                let id = try #require(subscription["id"] as? String)
                try await f.pushVerified("token.rotated", userID: "1100", session: try f.session("1100"))
                var json: [String: Any] = [:]
                let deadline = ContinuousClock.now + .seconds(20)
                repeat {
                    try await Task.sleep(for: .milliseconds(200))
                    json = try await f.server.http.get("/v1/subscriptions/\(id)", bearer: LiveServer.adminToken).json ?? [:]
                } while json["enabled"] as? Bool == true && ContinuousClock.now < deadline
                #expect(json["enabled"] as? Bool == false)
                #expect((json["disabled_reason"] as? String)?.contains("failed since") == true)
                #expect(json["failing_since"] is String)
            }
        }
    }
}
