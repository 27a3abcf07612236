import EchoRelayCore
import EchoRelaySharedSignals
import EchoRelayStandIns
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `POST /v1/sets` end to end: SETs made and signed by Python's jwcrypto, the transmitter's
/// keys served by a JWKS endpoint on loopback, a live server on PostgreSQL with its workers,
/// and a subscriber that checks each delivery's Standard Webhooks signature.
@Suite struct SharedSignalsTests {
    static let issuer = "https://idp.example.com/"
    static let audience = "https://echorelay.example.com/v1/sets"
    static let pushToken = "set-push-token-0123456789abcdef"
    /// Shorter than the default 30 s, so the key rotation test need not wait long.
    static let refetchInterval: Duration = .seconds(1)

    static let caep = "https://schemas.openid.net/secevent/caep/event-type/"
    static let risc = "https://schemas.openid.net/secevent/risc/event-type/"

    struct Material: Decodable {
        let jwks_initial: JSONValue
        let jwks_rotated: JSONValue
        let tokens: [String: String]
    }

    /// Each token's claims: `jti` is its name; `kid` picks the signing key.
    static let generator = #"""
        import json, sys, time
        from jwcrypto import jwk, jws
        from jwcrypto.common import json_encode

        issuer, audience = sys.argv[1], sys.argv[2]
        rsa = jwk.JWK.generate(kty="RSA", size=2048, kid="rsa-1")
        ec = jwk.JWK.generate(kty="EC", crv="P-256", kid="ec-1")
        later = jwk.JWK.generate(kty="RSA", size=2048, kid="rsa-later")
        imposter = jwk.JWK.generate(kty="RSA", size=2048, kid="rsa-1")
        CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
        RISC = "https://schemas.openid.net/secevent/risc/event-type/"
        SSF = "https://schemas.openid.net/secevent/ssf/event-type/"
        now = int(time.time())

        def sign(key, jti, events, sub_id=None, alg=None, kid=None, **changes):
            claims = {"iss": issuer, "aud": [audience], "iat": now, "jti": jti, "events": events}
            if sub_id is not None:
                claims["sub_id"] = sub_id
            claims.update(changes)
            alg = alg or ("ES256" if key["kty"] == "EC" else "RS256")
            token = jws.JWS(json.dumps(claims).encode())
            token.add_signature(key, alg=alg, protected=json_encode({"alg": alg, "typ": "secevent+jwt", "kid": kid or key.key_id}))
            return token.serialize(compact=True)

        user = lambda sub: {"format": "iss_sub", "iss": issuer, "sub": sub}
        hmac_key = jwk.JWK(kty="oct", k=jwk.base64url_encode(rsa.export_to_pem()))
        tokens = {
            "credential-change": sign(rsa, "credential-change", {CAEP + "credential-change": {
                "credential_type": "password", "change_type": "update", "event_timestamp": now - 30}}, user("u-set-1")),
            "identifier-changed": sign(rsa, "identifier-changed", {RISC + "identifier-changed": {
                "subject": {"format": "phone_number", "phone_number": "+15550001111"}, "new-value": "+15550002222"}},
                {"format": "opaque", "id": "u-set-1"}, alg="PS256"),
            "account-disabled": sign(ec, "account-disabled", {RISC + "account-disabled": {
                "subject": {"format": "complex", "user": {"format": "opaque", "id": "u-set-1"}}, "reason": "hijacking"}}),
            "account-purged-by-phone": sign(rsa, "account-purged-by-phone", {RISC + "account-purged": {
                "subject": {"format": "phone_number", "phone_number": "+15550007777"}}}),
            "verification": sign(rsa, "verification", {SSF + "verification": {"state": "VGhpcyBpcyBhIHN0YXRl"}},
                                 {"format": "opaque", "id": "stream-1"}),
            "session-revoked": sign(rsa, "session-revoked", {CAEP + "session-revoked": {}}, user("u-set-1")),
            "assurance-level-change": sign(rsa, "assurance-level-change", {CAEP + "assurance-level-change": {
                "namespace": "NIST-AAL", "current_level": "nist-aal2", "previous_level": "nist-aal1", "change_direction": "increase"}},
                user("u-set-1")),
            "email-only": sign(rsa, "email-only", {RISC + "account-disabled": {}}, {"format": "email", "email": "a@example.com"}),
            "rotated": sign(later, "rotated", {CAEP + "credential-change": {"credential_type": "password", "change_type": "update"}},
                            user("u-set-3")),
            "none": ".".join(jwk.base64url_encode(json.dumps(part)) for part in (
                {"alg": "none", "typ": "secevent+jwt", "kid": "rsa-1"},
                {"iss": issuer, "aud": audience, "iat": now, "jti": "none", "events": {CAEP + "credential-change": {}}})) + ".",
            "hs256-public-key": sign(hmac_key, "hs256", {CAEP + "credential-change": {}}, user("u-x"), alg="HS256", kid="rsa-1"),
            "imposter": sign(imposter, "imposter", {CAEP + "credential-change": {}}, user("u-x")),
            "unknown-kid": sign(rsa, "unknown-kid", {CAEP + "credential-change": {}}, user("u-x"), kid="nobody"),
            "wrong-issuer": sign(rsa, "wrong-issuer", {CAEP + "credential-change": {}}, user("u-x"), iss="https://evil.example/"),
            "wrong-audience": sign(rsa, "wrong-audience", {CAEP + "credential-change": {}}, user("u-x"), aud="https://other.example/"),
            "two-events": sign(rsa, "two-events", {CAEP + "credential-change": {}, RISC + "account-disabled": {}}, user("u-x")),
        }
        public = lambda *keys: {"keys": [json.loads(k.export_public()) for k in keys]}
        print(json.dumps({"jwks_initial": public(rsa, ec), "jwks_rotated": public(rsa, ec, later), "tokens": tokens}))
        """#

    static func material() async throws -> Material {
        try await made.value.get()
    }

    private static let made = Task { () -> Result<Material, any Error> in
        do {
            let run = try Spawned("/usr/bin/env", ["python3", "-c", generator, issuer, audience])
            guard try await run.wait(timeout: .seconds(60)) == 0 else {
                throw TestSetupError("jwcrypto could not make the tokens (run scripts/test, which installs it): \(String(decoding: run.standardError, as: UTF8.self))")
            }
            return .success(try JSONDecoder().decode(Material.self, from: run.standardOutput))
        } catch {
            return .failure(error)
        }
    }

    /// Serves the transmitter's JWKS on loopback and gives the settings of a receiver that trusts it.
    static func withJWKS(
        pushToken: String? = nil,
        _ body: @Sendable (SecurityEventReceiverSettings, SecurityEventTokenTests.Published, Material) async throws -> Void
    ) async throws {
        let material = try await material()
        let jwks = SecurityEventTokenTests.Published(material.jwks_initial)
        let router = Router()
        router.get("/jwks") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "application/jwk-set+json"], body: .init(byteBuffer: ByteBuffer(bytes: jwks.current)))
        }
        try await LoopbackServer.run(router) { port in
            let settings = SecurityEventReceiverSettings(issuer: issuer, audience: audience, jwksURL: "http://127.0.0.1:\(port)/jwks",
                                                         allowHTTP: true, pushToken: pushToken.map(Secret.init),
                                                         keysRefetchInterval: refetchInterval)
            try await body(settings, jwks, material)
        }
    }

    /// Runs a live server that takes SETs from a transmitter whose JWKS is served on loopback.
    static func withTransmitter(
        pushToken: String? = nil, logger: Logger = TestLogger.quiet,
        _ body: @Sendable (EchoFixture, SecurityEventTokenTests.Published, Material) async throws -> Void
    ) async throws {
        try await withJWKS(pushToken: pushToken) { settings, jwks, material in
            try await EchoFixture.run(securityEvents: settings, logger: logger) { f in
                try await body(f, jwks, material)
            }
        }
    }

    static func push(_ token: String, to server: LiveServer, contentType: String = "application/secevent+jwt",
                     bearer: String? = nil) async throws -> TestHTTPResponse {
        var headers = [("Content-Type", contentType), ("Accept", "application/json")]
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        return try await server.http.send(.POST, "/v1/sets", headers: headers, body: Array(token.utf8))
    }

    static func recorded(_ server: LiveServer) async throws -> [[String: Any]] {
        let response = try await server.http.get("/v1/sets?limit=100", bearer: LiveServer.adminToken)
        return try #require(response.json?["security_events"] as? [[String: Any]], "\(response.text)")
    }

    /// The three mappings reach a subscriber in order, signed; each event's page shows its SET.
    @Test func caepAndRiscUpdatesArriveAsTheUsersEventsInOrderVerifiedByTheirSignature() async throws {
        try await Self.withTransmitter { f, _, material in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                for name in ["credential-change", "identifier-changed", "account-disabled"] {
                    let response = try await Self.push(try #require(material.tokens[name]), to: f.server)
                    #expect(response.status == 202, "\(name): \(response.text)")
                    #expect(response.body.isEmpty, "\(name): a 202 has an empty body")
                }
                let received = try await subscriber.waitForDeliveries(count: 3, within: .seconds(30))
                #expect(received.allSatisfy { $0.signatureValid })
                let bodies = received.compactMap(\.object)
                #expect(bodies.map { $0["type"]?.stringValue } == ["token.rotated", "phone.changed", "account.deactivated"])
                #expect(bodies.map { $0["sequence"] } == [.integer(1), .integer(2), .integer(3)])
                #expect(bodies.allSatisfy { $0["user_id"]?.stringValue == "u-set-1" })
                #expect(bodies[1]["data"]?.objectValue?["phone_number"]?.stringValue == "+15550002222")

                // Support sees where each came from; no echo request was made.
                let eventID = try #require(bodies[0]["event_id"]?.stringValue)
                let event = try await f.outcome(of: eventID)
                #expect(event["status"] as? String == "verified")
                #expect(event["reason"] as? String == "set_signature")
                #expect(event["source"] as? String == "set")
                let origin = try #require(event["security_event"] as? [String: Any])
                #expect(origin["jti"] as? String == "credential-change")
                #expect(origin["issuer"] as? String == Self.issuer)
                #expect(origin["event_type"] as? String == Self.caep + "credential-change")
                #expect(f.provider.requests.isEmpty, "a SET is verified by its signature, never by OAuth Echo")

                let user = try await f.user("u-set-1").json
                #expect(user?["state"] as? String == "deactivated")
                #expect(user?["phone_number"] as? String == "+15550002222")

                // The same SET again is answered 202 and changes nothing.
                let again = try await Self.push(try #require(material.tokens["credential-change"]), to: f.server)
                #expect(again.status == 202)
                try await Task.sleep(for: .milliseconds(500))
                #expect(subscriber.deliveries.count == 3)
                #expect(try await Self.recorded(f.server).count == 3)
            }
        }
    }

    /// What is not relayed is still recorded for support: the verification event with its state,
    /// an event type EchoRelay does not relay, a subject that names no user; a phone-number
    /// subject names the user whose number EchoRelay verified.
    @Test func verificationIgnoredAndUnmatchedSetsAreRecordedAndOnlyUpdatesForKnownUsersAreDelivered() async throws {
        try await Self.withTransmitter { f, _, material in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let session = try f.session("u-set-2", phone: "+15550007777")
                try await f.pushVerified("phone.changed", userID: "u-set-2", phone: "+15550007777", session: session)
                _ = try await subscriber.waitForDeliveries(count: 1, within: .seconds(30))

                for name in ["verification", "assurance-level-change", "email-only", "account-purged-by-phone"] {
                    let response = try await Self.push(try #require(material.tokens[name]), to: f.server)
                    #expect(response.status == 202, "\(name): \(response.text)")
                }
                let received = try await subscriber.waitForDeliveries(count: 2, within: .seconds(30))
                let purged = try #require(received.last?.object)
                #expect(purged["type"]?.stringValue == "account.deactivated")
                #expect(purged["user_id"]?.stringValue == "u-set-2")
                #expect(purged["sequence"] == .integer(2))

                let recorded = try await Self.recorded(f.server)
                let byJTI = Dictionary(uniqueKeysWithValues: recorded.map { ($0["jti"] as? String ?? "", $0) })
                #expect(byJTI["verification"]?["disposition"] as? String == "verification")
                #expect(byJTI["verification"]?["verification_state"] as? String == "VGhpcyBpcyBhIHN0YXRl")
                #expect(byJTI["assurance-level-change"]?["disposition"] as? String == "ignored")
                #expect(byJTI["assurance-level-change"]?["note"] as? String == "an event type EchoRelay does not relay")
                #expect(byJTI["email-only"]?["disposition"] as? String == "unmatched")
                #expect((byJTI["email-only"]?["subject"] as? [String: Any])?["email"] as? String == "a@example.com")
                #expect(byJTI["account-purged-by-phone"]?["disposition"] as? String == "event")
                #expect(byJTI["account-purged-by-phone"]?["event_id"] as? String == purged["event_id"]?.stringValue)
                let unmatched = try await f.server.http.get("/v1/sets?disposition=unmatched", bearer: LiveServer.adminToken)
                #expect((unmatched.json?["security_events"] as? [[String: Any]])?.map { $0["jti"] as? String } == ["email-only"])
                try await Task.sleep(for: .milliseconds(500))
                #expect(subscriber.deliveries.count == 2, "nothing but the update was delivered")
            }
        }
    }

    /// Every refusal is a 400 with its RFC 8935 code, and stores nothing.
    @Test(arguments: [
        ("none", "invalid_request"), ("hs256-public-key", "invalid_request"), ("imposter", "invalid_key"),
        ("unknown-kid", "invalid_key"), ("wrong-issuer", "invalid_issuer"), ("wrong-audience", "invalid_audience"),
        ("two-events", "invalid_request"),
    ])
    func aRefusedSetIsA400WithItsCodeAndStoresNothing(name: String, code: String) async throws {
        try await Self.withTransmitter { f, _, material in
            let token = try #require(material.tokens[name])
            let response = try await Self.push(token, to: f.server)
            #expect(response.status == 400, "\(name): \(response.text)")
            #expect(response.headers["Content-Type"].first == "application/json")
            #expect(response.json?["err"] as? String == code, "\(name): \(response.text)")
            let description = try #require(response.json?["description"] as? String)
            #expect(!description.isEmpty)
            for part in token.split(separator: ".") where part.count > 8 {
                #expect(!description.contains(part), "\(name): the description quotes the token")
            }
            #expect(try await Self.recorded(f.server).isEmpty)
            #expect(try await f.server.rowCounts()["events"] == 0)
        }
    }

    @Test func aWrongContentTypeOrAMissingPushTokenIsRefusedAndAKeyPublishedLaterIsFetched() async throws {
        try await Self.withTransmitter(pushToken: Self.pushToken) { f, jwks, material in
            let token = try #require(material.tokens["rotated"])
            let unauthenticated = try await Self.push(token, to: f.server)
            #expect(unauthenticated.status == 401)
            #expect(unauthenticated.headers["WWW-Authenticate"].first == "Bearer")
            #expect(unauthenticated.json?["err"] as? String == "authentication_failed")
            #expect(!unauthenticated.text.contains(Self.pushToken))
            #expect(try await Self.push(token, to: f.server, bearer: "set-push-token-wrong-wrong-wrong").status == 401)

            let json = try await Self.push(token, to: f.server, contentType: "application/json", bearer: Self.pushToken)
            #expect(json.status == 400)
            #expect(json.json?["err"] as? String == "invalid_request")
            #expect((json.json?["description"] as? String)?.contains("application/secevent+jwt") == true)

            // rsa-later is not published yet; once it is, the same SET is accepted.
            let early = try await Self.push(token, to: f.server, bearer: Self.pushToken)
            #expect(early.status == 400 && early.json?["err"] as? String == "invalid_key", "\(early.text)")
            jwks.publish(material.jwks_rotated)
            try await Task.sleep(for: Self.refetchInterval + .milliseconds(200))
            let later = try await Self.push(token, to: f.server, contentType: "application/secevent+jwt; charset=utf-8", bearer: Self.pushToken)
            #expect(later.status == 202, "\(later.text)")
            #expect(try await Self.recorded(f.server).map { $0["jti"] as? String } == ["rotated"])
        }
    }

    /// Support sees the SETs from the command line (`echorelay sets`, `events show`) and the
    /// console's event page.
    @Test func supportSeesTheSetsAndWhereAnEventCameFromInTheCommandLineAndTheConsole() async throws {
        try await Self.withTransmitter { f, _, material in
            for name in ["credential-change", "assurance-level-change", "email-only"] {
                #expect(try await Self.push(try #require(material.tokens[name]), to: f.server).status == 202)
            }
            let table = try await SupportCommandLineTests.cli(["sets"], f.server)
            #expect(table.status == 0, "\(table.stderr)")
            let rows = table.stdout.split(separator: "\n").dropFirst().map(String.init)
            #expect(rows.count == 3, "\(table.stdout)")
            #expect(rows[0].contains("email-only") && rows[0].contains("account-disabled") && rows[0].contains("unmatched"))
            #expect(rows[1].contains("assurance-level-change") && rows[1].contains("ignored")
                    && rows[1].contains("an event type EchoRelay does not relay"))
            let eventID = try #require(rows[2].split(separator: " ").last.map(String.init))
            #expect(rows[2].contains("credential-change") && rows[2].contains("event") && eventID.hasPrefix("set:"), "\(rows[2])")

            let unmatched = try await SupportCommandLineTests.cli(["sets", "--disposition", "unmatched", "--json"], f.server)
            let json = try SupportCommandLineTests.object(unmatched)
            #expect((json["security_events"] as? [[String: Any]])?.map { $0["jti"] as? String } == ["email-only"])
            let refused = try await SupportCommandLineTests.cli(["sets", "--disposition", "lost"], f.server)
            #expect(refused.status != 0 && refused.stderr.contains("--disposition must be event, verification, noted, ignored, unmatched or refused"))

            _ = try await f.outcome(of: eventID)
            let shown = try await SupportCommandLineTests.cli(["events", "show", eventID], f.server)
            #expect(shown.stdout.contains("SET credential-change from \(Self.issuer), \(Self.caep)credential-change"), "\(shown.stdout)")
            #expect(shown.stdout.contains("set_signature"))

            let browser = ConsoleBrowser(port: f.server.http.port)
            #expect(try await browser.signIn(token: LiveServer.adminToken).status == 303)
            let page = try await browser.get("/console/events/\(eventID)")
            #expect(page.status == 200)
            #expect(page.text.contains("a Security Event Token <code>credential-change</code> from <code>\(Self.issuer)</code>"), "\(page.text)")
        }
    }

    /// Neither the push token nor a SET's signature reaches the logs, at any level, whether
    /// the push is accepted, refused or unauthenticated.
    @Test func thePushTokenAndTheSetsNeverReachTheLogs() async throws {
        let logs = LogCapture()
        let wrongToken = "set-push-token-guessed-0123456789"
        try await Self.withTransmitter(pushToken: Self.pushToken, logger: logs.logger) { f, _, material in
            let accepted = try #require(material.tokens["credential-change"])
            #expect(try await Self.push(accepted, to: f.server, bearer: Self.pushToken).status == 202)
            #expect(try await Self.push(try #require(material.tokens["imposter"]), to: f.server, bearer: Self.pushToken).status == 400)
            #expect(try await Self.push(accepted, to: f.server, bearer: wrongToken).status == 401)
            let text = logs.text
            #expect(text.contains("SET refused") && text.contains("SET accepted as an event"), "the pushes were logged")
            var secrets = [Self.pushToken, wrongToken]
            for name in ["credential-change", "imposter"] {
                secrets.append(String(try #require(material.tokens[name]).split(separator: ".").last ?? ""))
            }
            for secret in secrets {
                #expect(!text.contains(secret), "a token or a signature reached the logs")
            }
        }
    }

    /// The embedded store, as the docs' "trying it on one machine" runs it: `serve --demo` on
    /// SQLite with the transmitter's settings; two SETs reach a subscriber in order, signed.
    @Test func onTheEmbeddedStoreSetsBecomeEventsDeliveredInOrder() async throws {
        try await Self.withJWKS { settings, _, material in
            try await EmbeddedServeTests.withFolder { folder in
                try await StandInSubscriber().run { subscriber in
                    let port = try freeLoopbackPort()
                    let http = HTTPTestClient(port: port)
                    let serve = try ChildProcess(["serve", "--demo", "--port", String(port)], environment: [
                        "ECHORELAY_ADMIN_TOKEN": LiveServer.adminToken, "ECHORELAY_SET_ISSUER": settings.issuer,
                        "ECHORELAY_SET_AUDIENCE": settings.audience, "ECHORELAY_SET_JWKS_URL": settings.jwksURL ?? "",
                        "ECHORELAY_SET_ALLOW_HTTP": "1", "ECHORELAY_LOG_LEVEL": "notice",
                    ], workingDirectory: folder)
                    defer { serve.signal(SIGKILL) }
                    try await serve.waitUntilAnswering(http)
                    let created = try await http.send(
                        .POST, "/v1/subscriptions",
                        headers: [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")],
                        body: Array(#"{"url": "\#(subscriber.url())", "event_types": ["token.rotated", "account.deactivated"]}"#.utf8)
                    )
                    subscriber.setSecrets([try #require(created.json?["secret"] as? String, "\(created.text)")])
                    for name in ["credential-change", "account-disabled"] {
                        let answer = try await http.send(.POST, "/v1/sets", headers: [("Content-Type", "application/secevent+jwt")],
                                                         body: Array(try #require(material.tokens[name]).utf8))
                        #expect(answer.status == 202, "\(name): \(answer.text)")
                    }
                    let received = try await subscriber.waitForDeliveries(count: 2, within: .seconds(30))
                    #expect(received.allSatisfy { $0.signatureValid })
                    #expect(received.compactMap { $0.object?["type"]?.stringValue } == ["token.rotated", "account.deactivated"])
                    #expect(received.compactMap { $0.object?["sequence"] } == [.integer(1), .integer(2)])
                    #expect(received.allSatisfy { $0.object?["user_id"]?.stringValue == "u-set-1" })
                    let eventID = try #require(received.first?.object?["event_id"]?.stringValue)
                    let event = try await http.get("/v1/events/\(eventID)", bearer: LiveServer.adminToken).json
                    #expect(event?["reason"] as? String == "set_signature")
                    #expect((event?["security_event"] as? [String: Any])?["jti"] as? String == "credential-change")
                }
            }
        }
    }

    /// Without a configured transmitter the endpoint does not exist.
    @Test func withoutATransmitterPostingASetIsNotFound() async throws {
        try await LiveServer.run { server in
            let response = try await Self.push("a.b.c", to: server)
            #expect(response.status == 404)
            let list = try await server.http.get("/v1/sets", bearer: LiveServer.adminToken)
            #expect(list.status == 200)
            #expect((list.json?["security_events"] as? [Any])?.isEmpty == true)
            #expect(try await server.http.get("/v1/sets").status == 401)
        }
    }
}
