import EchoRelayCore
import EchoRelaySharedSignals
import EchoRelayStandIns
import Foundation
import NIOHTTP1
import Testing
import TestSupport

/// Poll delivery (RFC 8936) end to end: a transmitter on loopback (`Tests/Tools/ssf_transmitter.py`,
/// signing with jwcrypto and serving the SSF 1.0 metadata, JWKS, stream and poll endpoints), a
/// live server on PostgreSQL that finds it from its issuer alone, and a subscriber that checks
/// each delivery's signature. What EchoRelay sends is read from the transmitter's request log.
@Suite struct SharedSignalsPollTests {
    static let token = "transmitter-token-0123456789abcdef"
    static let pushToken = "set-push-token-0123456789abcdef"

    /// A receiver of `transmitter`, found from its issuer (no JWKS URL), polling `pollURL`.
    static func settings(_ transmitter: SSFTransmitter, pollURL: String?, wait: Duration = .seconds(3)) -> SecurityEventReceiverSettings {
        SecurityEventReceiverSettings(
            issuer: transmitter.issuer, audience: transmitter.audience, jwksURL: nil, allowHTTP: true,
            pushToken: Secret(pushToken), transmitterToken: Secret(token),
            poll: SecurityEventPollSettings(url: pollURL, maxEvents: 3, wait: wait, lockRetryInterval: .milliseconds(200)),
            keysRefetchInterval: .seconds(30)
        )
    }

    static func withPolling(
        pollURL: (SSFTransmitter) -> String? = { $0.defaultPollURL },
        _ body: @Sendable (EchoFixture, SSFTransmitter, StandInSubscriber) async throws -> Void
    ) async throws {
        let transmitter = try await SSFTransmitter(token: token)
        try await EchoFixture.run(securityEvents: settings(transmitter, pollURL: pollURL(transmitter))) { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                try await body(f, transmitter, subscriber)
            }
        }
    }

    static func user(_ transmitter: SSFTransmitter, _ id: String) -> [String: any Sendable] {
        SETSpec.issSub(iss: transmitter.issuer, sub: id)
    }

    /// Waits until the transmitter has seen `jtis` acknowledged.
    static func waitForAcks(_ jtis: [String], _ transmitter: SSFTransmitter, within limit: Duration = .seconds(30)) async throws -> [String: Int] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let acked = try await transmitter.acked()
            if jtis.allSatisfy({ acked[$0] != nil }) { return acked }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSetupError("the transmitter saw \(try await transmitter.acked().keys.sorted()) acknowledged, not all of \(jtis)")
    }

    /// The polls EchoRelay sent, oldest first.
    static func polls(_ transmitter: SSFTransmitter) async throws -> [SSFTransmitter.Received] {
        try await transmitter.requests().filter { $0.method == "POST" && ($0.path == "/poll" || $0.path.hasPrefix("/ssf/poll/")) }
    }

    /// SETs for two users, more than one poll's `maxEvents`, reach the subscriber in each user's
    /// order; each `jti` is acknowledged only in a poll sent after it was recorded, and every
    /// poll has RFC 8936's shape and the poll token.
    @Test func setsArriveByPollInPerUserOrderAndAreAcknowledgedAfterTheirCommit() async throws {
        try await Self.withPolling { f, transmitter, subscriber in
            let caep = SETSpec.caep, risc = SETSpec.risc
            let specs: [SETSpec] = [
                SETSpec(caep + "credential-change", event: ["credential_type": "password", "change_type": "update"], subID: Self.user(transmitter, "u-poll-1"), jti: "p-1"),
                SETSpec(caep + "credential-change", event: ["credential_type": "password", "change_type": "update"], subID: Self.user(transmitter, "u-poll-2"), jti: "p-2"),
                SETSpec(caep + "token-claims-change", event: ["claims": ["phone_number": "+15550004444"]], subID: Self.user(transmitter, "u-poll-1"), jti: "p-3"),
                SETSpec(caep + "session-revoked", event: [:], subID: Self.user(transmitter, "u-poll-1"), jti: "p-4"),
                SETSpec(risc + "tokens-revoked", event: [:], subID: Self.user(transmitter, "u-poll-2"), jti: "p-5"),
                SETSpec(risc + "account-enabled", event: [:], subID: Self.user(transmitter, "u-poll-2"), jti: "p-6"),
            ]
            let jtis = try await transmitter.enqueue(specs)
            #expect(jtis == ["p-1", "p-2", "p-3", "p-4", "p-5", "p-6"])
            let received = try await subscriber.waitForDeliveries(count: 5, within: .seconds(30))
            let byUser = Dictionary(grouping: received.compactMap(\.object), by: { $0["user_id"]?.stringValue ?? "" })
            #expect(byUser["u-poll-1"]?.map { $0["type"]?.stringValue } == ["token.rotated", "phone.changed", "account.deactivated"])
            #expect(byUser["u-poll-1"]?.map { $0["sequence"] } == [.integer(1), .integer(2), .integer(3)])
            #expect(byUser["u-poll-1"]?[1]["data"]?.objectValue?["phone_number"]?.stringValue == "+15550004444")
            #expect(byUser["u-poll-1"]?[2]["data"]?.objectValue?["reason"]?.stringValue == "session_revoked")
            #expect(byUser["u-poll-2"]?.map { $0["type"]?.stringValue } == ["token.rotated", "account.deactivated"])
            #expect(byUser["u-poll-2"]?[1]["data"]?.objectValue?["reason"]?.stringValue == "tokens_revoked")

            let acked = try await Self.waitForAcks(jtis, transmitter)
            #expect(jtis.allSatisfy { acked[$0] == 1 }, "each SET acknowledged once: \(acked)")
            #expect(try await transmitter.errors().isEmpty)
            let polls = try await Self.polls(transmitter)
            for poll in polls {
                #expect(poll.headers["authorization"] == "Bearer \(Self.token)")
                #expect(poll.headers["content-type"] == "application/json")
                let json = try #require(poll.json)
                #expect(json["maxEvents"] as? Int == 3 || json["maxEvents"] as? Int == 0, "\(json)")
                #expect(json["returnImmediately"] as? Bool != nil)
                #expect(json["ack"] is [String])
            }
            // No jti is acknowledged in the poll whose answer carried it: only in a later one.
            let acks = polls.map { Set(($0.json?["ack"] as? [String]) ?? []) }
            #expect(acks.first?.isEmpty == true, "the first poll acknowledges nothing")
            let recorded = try await SharedSignalsTests.recorded(f.server)
            #expect(Set(recorded.compactMap { $0["jti"] as? String }) == Set(jtis))
            let noted = recorded.first { $0["jti"] as? String == "p-6" }
            #expect(noted?["disposition"] as? String == "noted")
            #expect((noted?["note"] as? String)?.contains("enabled again") == true)

            // Support sees why the sessions ended.
            let timeline = try await f.server.http.get("/v1/users/u-poll-1/events", bearer: LiveServer.adminToken)
            let reasons = (timeline.json?["events"] as? [[String: Any]])?.map { $0["session_reason"] as? String }
            #expect(reasons == ["session_revoked", nil, nil], "\(timeline.text)")
        }
    }

    /// A polled SET that fails a check goes back in `setErrs` with its RFC 8935 code, is never
    /// acknowledged, delivers nothing, and is recorded refused; a `sub` or an `exp` claim is
    /// refused as SSF 1.0 requires.
    @Test func aSetThatFailsACheckIsReportedInSetErrsAndRecordedRefused() async throws {
        try await Self.withPolling { f, transmitter, subscriber in
            let caep = SETSpec.caep
            let change: [String: any Sendable] = ["credential_type": "password", "change_type": "update"]
            let good = SETSpec(caep + "credential-change", event: change, subID: Self.user(transmitter, "u-bad"), jti: "good")
            var withSub = good, withExp = good, otherIssuer = good, wrongKey = good
            withSub.jti = "with-sub"
            withSub.claims = ["sub": "u-bad"]
            withExp.jti = "with-exp"
            withExp.claims = ["exp": Int(Date().timeIntervalSince1970) + 600]
            otherIssuer.jti = "other-issuer"
            otherIssuer.claims = ["iss": "https://evil.example/"]
            wrongKey.jti = "other-jti-key"
            wrongKey.claims = ["jti": "not-the-key"]
            let garbage = SETSpec.raw("not.a-set", jti: "garbage")
            let jtis = try await transmitter.enqueue([withSub, withExp, otherIssuer, wrongKey, garbage, good])
            _ = try await Self.waitForAcks(["good"], transmitter)
            let deadline = ContinuousClock.now + .seconds(15)
            var errors = try await transmitter.errors()
            while errors.count < 5, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                errors = try await transmitter.errors()
            }
            #expect(errors["with-sub"]?.err == "invalid_request")
            #expect(errors["with-sub"]?.description.contains("sub") == true)
            #expect(errors["with-exp"]?.err == "invalid_request")
            #expect(errors["with-exp"]?.description.contains("exp") == true)
            #expect(errors["other-issuer"]?.err == "invalid_issuer")
            #expect(errors["other-jti-key"]?.err == "invalid_request")
            #expect(errors["garbage"]?.err == "invalid_request")
            let acked = try await transmitter.acked()
            #expect(Set(acked.keys) == ["good"], "only the good SET is acknowledged: \(acked)")

            let refused = try await f.server.http.get("/v1/sets?disposition=refused&limit=100", bearer: LiveServer.adminToken)
            let records = try #require(refused.json?["security_events"] as? [[String: Any]])
            #expect(Set(records.compactMap { $0["jti"] as? String }) == Set(jtis.filter { $0 != "good" }))
            #expect(records.allSatisfy { ($0["note"] as? String)?.hasPrefix("invalid_") == true })
            _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(30))
            try await Task.sleep(for: .milliseconds(300))
            #expect(subscriber.deliveries.count == 1, "only the good SET was delivered")
        }
    }

    /// An `email` subject names the user whose verified email EchoRelay knows, from the
    /// transmitter's own RISC identifier change; an email it knows for nobody is unmatched.
    @Test func anEmailSubjectNamesTheUserWhoseVerifiedEmailItIs() async throws {
        try await Self.withPolling { f, transmitter, subscriber in
            _ = try await transmitter.enqueue([SETSpec.credentialChange(iss: transmitter.issuer, sub: "u-mail", jti: "m-1")])
            _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(30))
            let jtis = try await transmitter.enqueue([
                SETSpec(SETSpec.risc + "identifier-changed", event: ["subject": SETSpec.email("jane@old.example"), "new-value": "Jane@Example.com"],
                        subID: Self.user(transmitter, "u-mail"), jti: "m-2"),
                SETSpec(SETSpec.risc + "account-disabled", subID: SETSpec.email("jane@example.com"), jti: "m-3"),
                SETSpec(SETSpec.risc + "account-disabled", subID: SETSpec.email("nobody@example.com"), jti: "m-4"),
            ])
            _ = try await Self.waitForAcks(jtis, transmitter)
            let received = try await subscriber.waitForDeliveries(count: 2, within: .seconds(30))
            #expect(received.last?.object?["type"]?.stringValue == "account.deactivated")
            #expect(received.last?.object?["user_id"]?.stringValue == "u-mail")
            let recorded = Dictionary(uniqueKeysWithValues: try await SharedSignalsTests.recorded(f.server).map { ($0["jti"] as? String ?? "", $0) })
            #expect(recorded["m-2"]?["disposition"] as? String == "noted")
            #expect(recorded["m-3"]?["disposition"] as? String == "event")
            #expect(recorded["m-4"]?["disposition"] as? String == "unmatched")
            #expect(recorded["m-4"]?["note"] as? String == "no user has this verified email")
        }
    }

    /// The transmitter rotates its key: it publishes the new one, then signs with it a second
    /// (and a moment) after EchoRelay last fetched the keys. Over poll the SET is accepted,
    /// perhaps after coming back once; over push it is accepted, or answered 503 with
    /// Retry-After and accepted when sent again. Never refused.
    @Test func aKeyPublishedJustAfterTheLastFetchLosesNoSetOverPollOrPush() async throws {
        try await Self.withPolling { f, transmitter, subscriber in
            let change: [String: any Sendable] = ["credential_type": "password", "change_type": "update"]
            let first = SETSpec(SETSpec.caep + "credential-change", event: change, subID: Self.user(transmitter, "u-rot"), jti: "before-rotation")
            _ = try await transmitter.enqueue([first])
            _ = try await Self.waitForAcks(["before-rotation"], transmitter)
            let fetches = try await transmitter.jwksFetches()

            // Over poll: published one second after the last fetch, signed with at once.
            try await Task.sleep(for: .seconds(1))
            try await transmitter.addKey(kid: "rsa-2", publish: true, signing: true)
            var polled = first
            polled.jti = "after-rotation-poll"
            _ = try await transmitter.enqueue([polled])
            _ = try await Self.waitForAcks(["after-rotation-poll"], transmitter)
            #expect(try await transmitter.jwksFetches() > fetches, "the unknown kid fetched the keys")

            // Over push: published a moment after the last fetch, within the floor between fetches.
            try await transmitter.addKey(kid: "rsa-3", publish: true, signing: true)
            var pushed = first
            pushed.jti = "after-rotation-push"
            let token = try #require(try await transmitter.sign([pushed]).first)
            var answers: [Int] = []
            for _ in 0 ..< 10 {
                let response = try await SharedSignalsTests.push(token, to: f.server, bearer: Self.pushToken)
                answers.append(response.status)
                if response.status == 202 { break }
                #expect(response.status == 503, "\(response.text)")
                let retryAfter = try #require(response.headers["Retry-After"].first.flatMap(Int.init))
                #expect((1 ... 2).contains(retryAfter))
                try await Task.sleep(for: .seconds(retryAfter))
            }
            #expect(answers.last == 202, "answers: \(answers)")
            #expect(!answers.contains(400), "a SET signed with a published key was refused")
            #expect(try await transmitter.errors().isEmpty, "nothing went back in setErrs")
            let received = try await subscriber.waitForDeliveries(count: 3, within: .seconds(30))
            #expect(received.compactMap { $0.object?["sequence"] } == [.integer(1), .integer(2), .integer(3)])
        }
    }

    /// On the embedded store too: `serve --demo` finds the transmitter from its issuer, polls it,
    /// delivers in order and acknowledges what it recorded.
    @Test func onTheEmbeddedStoreSetsArriveByPollInOrderAndAreAcknowledged() async throws {
        let transmitter = try await SSFTransmitter(token: Self.token)
        try await EmbeddedServeTests.withFolder { folder in
            try await StandInSubscriber().run { subscriber in
                let port = try freeLoopbackPort()
                let http = HTTPTestClient(port: port)
                let serve = try ChildProcess(["serve", "--demo", "--port", String(port)], environment: [
                    "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken, "ECHORELAY_SET_ISSUER": transmitter.issuer,
                    "ECHORELAY_SET_AUDIENCE": transmitter.audience, "ECHORELAY_SET_ALLOW_HTTP": "1",
                    "ECHORELAY_SET_POLL_URL": transmitter.defaultPollURL, "ECHORELAY_SET_TRANSMITTER_TOKEN": Self.token,
                    "ECHORELAY_SET_POLL_WAIT": "5s", "ECHORELAY_LOG_LEVEL": "notice",
                ], workingDirectory: folder)
                defer { serve.signal(SIGKILL) }
                try await serve.waitUntilAnswering(http)
                let created = try await http.send(
                    .POST, "/v1/subscriptions",
                    headers: [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")],
                    body: Array(#"{"url": "\#(subscriber.url())", "event_types": ["token.rotated", "account.deactivated"]}"#.utf8)
                )
                subscriber.setSecrets([try #require(created.json?["secret"] as? String, "\(created.text)")])
                let jtis = try await transmitter.enqueue([
                    SETSpec.credentialChange(iss: transmitter.issuer, sub: "u-embedded", jti: "e-1"),
                    SETSpec(SETSpec.caep + "session-revoked", subID: Self.user(transmitter, "u-embedded"), jti: "e-2"),
                    SETSpec.credentialChange(iss: transmitter.issuer, sub: "u-embedded", jti: "e-3"),
                ])
                let received = try await subscriber.waitForDeliveries(count: 3, within: .seconds(30))
                #expect(received.allSatisfy { $0.signatureValid })
                #expect(received.compactMap { $0.object?["type"]?.stringValue } == ["token.rotated", "account.deactivated", "token.rotated"])
                #expect(received.compactMap { $0.object?["sequence"] } == [.integer(1), .integer(2), .integer(3)])
                let acked = try await Self.waitForAcks(jtis, transmitter)
                #expect(jtis.allSatisfy { acked[$0] == 1 })
                #expect(try await Self.polls(transmitter).allSatisfy { $0.headers["authorization"] == "Bearer \(Self.token)" },
                        "the poll token defaults to the transmitter token")
            }
        }
    }

    /// A poll that fails (the transmitter answers 503, or drops the connection) is tried again,
    /// the SETs it would have carried are not lost, and the errors are counted.
    @Test func pollErrorsBackOffAndNothingIsLost() async throws {
        try await Self.withPolling { f, transmitter, subscriber in
            try await transmitter.outage(3, status: 503)
            let change: [String: any Sendable] = ["credential_type": "password", "change_type": "update"]
            let jtis = try await transmitter.enqueue((1 ... 4).map { index in
                SETSpec(SETSpec.caep + "credential-change", event: change, subID: Self.user(transmitter, "u-outage"), jti: "outage-\(index)")
            })
            _ = try await Self.waitForAcks(jtis, transmitter, within: .seconds(60))
            let received = try await subscriber.waitForDeliveries(count: 4, within: .seconds(30))
            #expect(received.compactMap { $0.object?["sequence"] } == [.integer(1), .integer(2), .integer(3), .integer(4)])
            // The transmitter takes the acknowledgements as a poll arrives; EchoRelay counts them
            // when that (long) poll is answered.
            var metrics = try await f.server.http.get("/metrics").text
            let deadline = ContinuousClock.now + .seconds(10)
            while !metrics.contains("echorelay_set_poll_acknowledged_total 4"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                metrics = try await f.server.http.get("/metrics").text
            }
            #expect(metrics.contains("echorelay_set_poll_errors_total{kind=\"status\"} 3"), "\(metrics)")
            #expect(metrics.contains("echorelay_set_polled_total 4"))
            #expect(metrics.contains("echorelay_set_poll_acknowledged_total 4"))
            #expect(metrics.contains("echorelay_set_poll_last_success_age_seconds"))
        }
    }
}

/// The stream managed from EchoRelay (SSF 1.0 §8.1): registered for poll and for push with
/// `echorelay sets stream create`, verified over each with `… verify`, its status read and set,
/// against the transmitter on loopback, which records what it was sent.
@Suite struct SharedSignalsStreamTests {
    typealias Poll = SharedSignalsPollTests

    static func cli(_ arguments: [String], _ f: EchoFixture) async throws -> SupportCommandLineTests.Result {
        try await SupportCommandLineTests.cli(["sets", "stream"] + arguments, f.server)
    }

    @Test func aStreamIsRegisteredForPollAndForPushAndVerifiedOverEach() async throws {
        try await Poll.withPolling(pollURL: { _ in nil }) { f, transmitter, subscriber in
            // Poll: the transmitter's endpoint is kept, and polled with no other setting.
            let created = try await Self.cli(["create", "--delivery", "poll"], f)
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stdout.contains("registered for poll delivery"), "\(created.stdout)")
            let registrations = try await transmitter.requests().filter { $0.method == "POST" && $0.path == "/ssf/streams" }
            let registration = try #require(registrations.first)
            #expect(registration.headers["authorization"] == "Bearer \(Poll.token)")
            let body = try #require(registration.json)
            #expect((body["delivery"] as? [String: Any])?["method"] as? String == "urn:ietf:rfc:8936")
            #expect(body["events_requested"] as? [String] == SecurityEventMapping.eventsRequested)
            let stream = try #require(try await f.server.http.get("/v1/sets/stream", bearer: LiveServer.adminToken).json)
            let streamID = try #require(stream["stream_id"] as? String)
            #expect(stream["delivery"] as? String == "poll")
            #expect(stream["endpoint_url"] as? String == transmitter.pollURL(stream: streamID))
            #expect(stream["status"] as? String == "enabled")

            let verified = try await Self.cli(["verify"], f)
            #expect(verified.status == 0, "\(verified.stderr)")
            #expect(verified.stdout.contains("verified: the verification event arrived with the same state after"), "\(verified.stdout)")
            #expect(try await Poll.polls(transmitter).contains { $0.path == "/ssf/poll/\(streamID)" }, "the verification came by poll")
            _ = try await transmitter.enqueue([SETSpec.credentialChange(iss: transmitter.issuer, sub: "u-stream", jti: "by-stream")],
                                              queue: streamID)
            let delivered = try await subscriber.waitForDeliveries(count: 1, within: .seconds(30))
            #expect(delivered.first?.object?["user_id"]?.stringValue == "u-stream")

            // Push: the transmitter is given this relay's /v1/sets and the push token.
            let pushURL = f.server.http.baseURL + "/v1/sets"
            let pushed = try await Self.cli(["create", "--delivery", "push"], f)
            #expect(pushed.status == 0, "\(pushed.stderr)")
            let streams = try await transmitter.streams()
            let pushStream = try #require(streams.first { ($0["delivery"] as? [String: Any])?["method"] as? String == "urn:ietf:rfc:8935" })
            #expect((pushStream["delivery"] as? [String: Any])?["endpoint_url"] as? String == pushURL)
            #expect(pushStream["authorization_header"] as? String == "Bearer \(Poll.pushToken)")
            let overPush = try await Self.cli(["verify"], f)
            #expect(overPush.status == 0, "\(overPush.stderr)")
            #expect(try await transmitter.pushes().contains { $0.status == 202 && $0.url == pushURL }, "the verification came by push")

            // A wrong or a missing state is a failure, and says so.
            try await transmitter.nextVerification(state: .wrong)
            let wrong = try await Self.cli(["verify", "--timeout", "10"], f)
            #expect(wrong.status == 1 && wrong.stderr.contains("arrived with another state"), "\(wrong.stderr)")
            try await transmitter.nextVerification(state: .missing)
            let missing = try await Self.cli(["verify", "--timeout", "10"], f)
            #expect(missing.status == 1 && missing.stderr.contains("arrived without a state"), "\(missing.stderr)")
            let shown = try #require(try await f.server.http.get("/v1/sets/stream", bearer: LiveServer.adminToken).json)
            #expect((shown["verification"] as? [String: Any])?["outcome"] as? String == "missing_state")

            // Status: read, set, kept, shown and counted.
            let status = try await Self.cli(["status"], f)
            #expect(status.status == 0 && status.stdout.contains("is enabled"), "\(status.stdout) \(status.stderr)")
            let paused = try await Self.cli(["status", "--set", "paused", "--reason", "maintenance"], f)
            #expect(paused.status == 0 && paused.stdout.contains("is paused: maintenance"), "\(paused.stdout) \(paused.stderr)")
            #expect(try await transmitter.streams().contains { $0["status"] as? String == "paused" })
            let show = try await Self.cli(["show"], f)
            #expect(show.stdout.contains("paused (maintenance)") && show.stdout.contains("missing_state"), "\(show.stdout)")
            let updated = try await Self.cli(["update", "--description", "EchoRelay staging"], f)
            #expect(updated.status == 0, "\(updated.stderr)")
            #expect(try await transmitter.requests().contains { $0.method == "PATCH" && $0.json?["description"] as? String == "EchoRelay staging" })
            let metrics = try await f.server.http.get("/metrics").text
            #expect(metrics.contains("echorelay_set_stream_status{status=\"paused\"} 1"), "\(metrics)")
            #expect(metrics.contains("echorelay_set_stream_verification{outcome=\"missing_state\"} 1"), "\(metrics)")
            #expect(metrics.contains("echorelay_set_stream_verification{outcome=\"passed\"} 0"), "\(metrics)")

            // The console's Shared Signals page shows the same.
            let browser = ConsoleBrowser(port: f.server.http.port)
            #expect(try await browser.signIn(token: LiveServer.adminToken).status == 303)
            let page = try await browser.get("/console/shared-signals")
            #expect(page.status == 200)
            let pushID = try #require(pushStream["stream_id"] as? String)
            #expect(page.text.contains("<code>\(pushID)</code>") && page.text.contains(">paused</span>")
                    && page.text.contains("maintenance") && page.text.contains(">missing_state</span>"), "\(page.text)")
            #expect(page.text.contains("<code>by-stream</code>"), "the latest SETs are listed")
        }
    }

    /// Each failure says what to do: no stream yet, a bad request, a token the transmitter refuses.
    @Test func streamErrorsNameTheCauseAndTheFix() async throws {
        let transmitter = try await SSFTransmitter(token: Poll.token)
        var settings = Poll.settings(transmitter, pollURL: nil)
        settings.transmitterToken = Secret("not-the-transmitter-token")
        try await transmitter.setMetadata(["delivery_methods_supported": ["urn:ietf:rfc:8936"]])
        try await EchoFixture.run(securityEvents: settings) { f in
            let pushOnly = try await SharedSignalsStreamTests.cli(["create", "--delivery", "push"], f)
            #expect(pushOnly.status == 1 && pushOnly.stderr.contains("the transmitter does not offer push delivery"), "\(pushOnly.stderr)")
            let none = try await SharedSignalsStreamTests.cli(["show"], f)
            #expect(none.status == 1 && none.stderr.contains("echorelay sets stream create"), "\(none.stderr)")
            let refused = try await SharedSignalsStreamTests.cli(["create", "--delivery", "poll"], f)
            #expect(refused.status == 1 && refused.stderr.contains("does not accept ECHORELAY_SET_TRANSMITTER_TOKEN"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("not-the-transmitter-token"))
            let usage = try await SharedSignalsStreamTests.cli(["create", "--delivery", "carrier-pigeon"], f)
            #expect(usage.status == 64 && usage.stderr.contains("--delivery must be push or poll"), "\(usage.stderr)")
            let api = try await f.server.http.send(.POST, "/v1/sets/stream", headers: [
                ("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json"),
            ], body: Array(#"{"delivery": "push"}"#.utf8))
            #expect(api.status == 422)
            #expect((api.json?["errors"] as? [[String: Any]])?.first?["field"] as? String == "endpoint_url", "\(api.text)")
            let support = try await f.server.http.get("/v1/sets/stream", bearer: "not-a-token")
            #expect(support.status == 401)
        }
    }

    /// The transmitter token, the poll token, the push token and the SETs polled never reach
    /// the logs or the stream EchoRelay shows, whatever the transmitter echoes; the stream's
    /// changes are in the audit log.
    @Test func theTokensNeverReachTheLogsOrTheStreamAndChangesAreAudited() async throws {
        let logs = LogCapture()
        let transmitter = try await SSFTransmitter(token: Poll.token)
        try await EchoFixture.run(securityEvents: Poll.settings(transmitter, pollURL: nil), logger: logs.logger) { f in
            #expect(try await Self.cli(["create", "--delivery", "poll"], f).status == 0)
            let signed = try #require(try await transmitter.sign([SETSpec.credentialChange(iss: transmitter.issuer, sub: "u-log", jti: "log-1")]).first)
            _ = try await transmitter.enqueue([SETSpec.raw(signed, jti: "log-1")],
                                              queue: try #require(try await transmitter.streams().first?["stream_id"] as? String))
            _ = try await Poll.waitForAcks(["log-1"], transmitter)
            try await transmitter.echoAuthorization(true)
            #expect(try await Self.cli(["create", "--delivery", "push"], f).status == 0)
            #expect(try await Self.cli(["status", "--set", "paused", "--reason", "rotating keys"], f).status == 0)
            let shown = try await f.server.http.get("/v1/sets/stream", bearer: LiveServer.adminToken).text
            let text = logs.text
            #expect(text.contains("set_stream.create") && text.contains("polled SET accepted as an event"), "the work was logged")
            for secret in [Poll.token, Poll.pushToken] {
                #expect(!text.contains(secret), "a token reached the logs")
                #expect(!shown.contains(secret), "a token is shown with the stream")
            }
            #expect(!text.contains(String(signed.split(separator: ".").last ?? "")), "a polled SET reached the logs")
            let audit = try await f.server.http.get("/v1/audit?limit=10", bearer: LiveServer.adminToken).json
            let actions = (audit?["entries"] as? [[String: Any]])?.compactMap { $0["action"] as? String } ?? []
            #expect(actions == ["set_stream.status", "set_stream.create", "set_stream.create"], "\(actions)")
        }
    }
}
