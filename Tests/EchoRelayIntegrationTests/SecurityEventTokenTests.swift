import EchoRelayCore
import EchoRelaySharedSignals
import EchoRelayStandIns
import Foundation
import Hummingbird
import NIOCore
import Synchronization
import Testing
import TestSupport

/// Security Event Tokens made by Python's jwcrypto (code nobody here wrote), verified by
/// `SecurityEventTokenVerifier`: RS256, PS256 and ES256 accepted; every refusal of issue 18
/// with its RFC 8935 code; a key published after start found by fetching the keys again.
@Suite struct SecurityEventTokenTests {
    static let issuer = "https://transmitter.example"
    static let audience = "https://echorelay.example/"

    /// Keys and tokens, made once per test run by `generator`.
    struct Material: Decodable {
        let jwksInitial: JSONValue
        let jwksRotated: JSONValue
        let tokens: [String: String]

        enum CodingKeys: String, CodingKey {
            case tokens
            case jwksInitial = "jwks_initial"
            case jwksRotated = "jwks_rotated"
        }
    }

    static let generator = #"""
        import json, sys, time
        from jwcrypto import jwk, jws
        from jwcrypto.common import json_encode

        issuer, audience = sys.argv[1], sys.argv[2]
        rsa1 = jwk.JWK.generate(kty="RSA", size=2048, kid="rsa-1")
        rsa2 = jwk.JWK.generate(kty="RSA", size=2048, kid="rsa-2")
        ec1 = jwk.JWK.generate(kty="EC", crv="P-256", kid="ec-1")
        imposter = jwk.JWK.generate(kty="RSA", size=2048, kid="rsa-1")
        CHANGE = "https://schemas.openid.net/secevent/caep/event-type/credential-change"
        now = int(time.time())

        def claims(**changes):
            c = {"iss": issuer, "aud": audience, "iat": now, "jti": "jti-" + str(len(changes)),
                 "sub_id": {"format": "iss_sub", "iss": issuer, "sub": "4815162342"},
                 "events": {CHANGE: {"credential_type": "password", "change_type": "update"}}}
            for key, value in changes.items():
                if value is None:
                    c.pop(key, None)
                else:
                    c[key] = value
            return c

        def sign(key, alg, payload, typ="secevent+jwt", kid=None):
            token = jws.JWS(json.dumps(payload).encode())
            token.add_signature(key, alg=alg, protected=json_encode({"alg": alg, "typ": typ, "kid": kid or key.key_id}))
            return token.serialize(compact=True)

        def b64(value):
            import base64
            return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

        hmac_key = jwk.JWK(kty="oct", k=jwk.base64url_encode(rsa1.export_to_pem()))
        tokens = {
            "rs256": sign(rsa1, "RS256", claims()),
            "ps256": sign(rsa1, "PS256", claims()),
            "es256": sign(ec1, "ES256", claims()),
            "aud_array": sign(rsa1, "RS256", claims(aud=["https://someone.else/", audience])),
            "rotated": sign(rsa2, "RS256", claims()),
            "none": b64({"alg": "none", "typ": "secevent+jwt", "kid": "rsa-1"}) + "." + b64(claims()) + ".e30",
            "hs256_public_key": sign(hmac_key, "HS256", claims(), kid="rsa-1"),
            "imposter": sign(imposter, "RS256", claims()),
            "unknown_kid": sign(rsa1, "RS256", claims(), kid="nope"),
            "typ_jwt": sign(rsa1, "RS256", claims(), typ="JWT"),
            "wrong_iss": sign(rsa1, "RS256", claims(iss="https://evil.example")),
            "wrong_aud": sign(rsa1, "RS256", claims(aud="https://someone.else/")),
            "no_jti": sign(rsa1, "RS256", claims(jti=None)),
            "no_iat": sign(rsa1, "RS256", claims(iat=None)),
            "future_iat": sign(rsa1, "RS256", claims(iat=now + 3600)),
            "two_events": sign(rsa1, "RS256", claims(events={CHANGE: {}, CHANGE + "2": {}})),
            "garbage": "not.a.jws",
        }
        public = lambda *keys: {"keys": [json.loads(k.export_public()) for k in keys]}
        print(json.dumps({"jwks_initial": public(rsa1, ec1), "jwks_rotated": public(rsa1, ec1, rsa2), "tokens": tokens}))
        """#

    /// Made once for the whole run: every test of this file reads the same keys and tokens
    /// (RSA key generation is dear, and the suite runs beside tests that count seconds).
    static func material() async throws -> Material {
        try await made.value.get()
    }

    private static let made = Task { () -> Result<Material, any Error> in
        do { return .success(try await makeMaterial()) } catch { return .failure(error) }
    }

    private static func makeMaterial() async throws -> Material {
        let run = try Spawned("/usr/bin/env", ["python3", "-c", generator, issuer, audience])
        guard try await run.wait(timeout: .seconds(60)) == 0 else {
            throw TestSetupError("jwcrypto could not make the tokens (run scripts/test, which installs it): \(String(decoding: run.standardError, as: UTF8.self))")
        }
        return try JSONDecoder().decode(Material.self, from: run.standardOutput)
    }

    /// The JWKS the transmitter publishes now, changed as the test goes.
    final class Published: Sendable {
        private let document: Mutex<[UInt8]>
        init(_ jwks: JSONValue) { document = Mutex(Array(jwks.canonicalEncoding())) }
        func publish(_ jwks: JSONValue) { document.withLock { $0 = Array(jwks.canonicalEncoding()) } }
        var current: [UInt8] { document.withLock { $0 } }
    }

    static func verifier(_ published: Published, refetchInterval: Duration = .zero) -> SecurityEventTokenVerifier {
        SecurityEventTokenVerifier(issuer: issuer, audience: audience,
                                   keys: TransmitterKeys(refetchInterval: refetchInterval) { published.current })
    }

    @Test func setsSignedWithThePublishedKeysVerify() async throws {
        let material = try await Self.material()
        let verifier = Self.verifier(Published(material.jwksInitial))
        for name in ["rs256", "ps256", "es256", "aud_array"] {
            let result = await verifier.verify(try #require(material.tokens[name]))
            guard case .success(let verified) = result else { Issue.record("\(name): \(result)"); continue }
            #expect(verified.eventType == "https://schemas.openid.net/secevent/caep/event-type/credential-change", "\(name)")
            #expect(verified.jti == "jti-0" || verified.jti == "jti-1", "\(name)")
            #expect(verified.issuer == Self.issuer)
            #expect(verified.subject?.objectValue?["sub"]?.stringValue == "4815162342")
            #expect(verified.event.objectValue?["change_type"]?.stringValue == "update")
        }
    }

    @Test(arguments: [
        ("none", "invalid_request", "alg"), ("hs256_public_key", "invalid_request", "alg"), ("imposter", "invalid_key", "signature"),
        ("unknown_kid", "invalid_key", "kid"), ("typ_jwt", "invalid_request", "typ"), ("wrong_iss", "invalid_issuer", "iss"),
        ("wrong_aud", "invalid_audience", "aud"), ("no_jti", "invalid_request", "jti"), ("no_iat", "invalid_request", "iat"),
        ("future_iat", "invalid_request", "iat"), ("two_events", "invalid_request", "exactly one event"),
        ("garbage", "invalid_request", "header"),
    ])
    func aBadSetIsRefusedWithItsRFC8935Code(name: String, code: String, mentions: String) async throws {
        let material = try await Self.material()
        let token = try #require(material.tokens[name])
        let result = await Self.verifier(Published(material.jwksInitial)).verify(token)
        guard case .failure(let refusal) = result else { Issue.record("\(name) was accepted"); return }
        #expect(refusal.code == code, "\(name): \(refusal)")
        #expect(refusal.description.contains(mentions), "\(name): \(refusal.description)")
        // A refusal never quotes the token or a key.
        for part in token.split(separator: ".") where part.count > 8 {
            #expect(!refusal.description.contains(part), "\(name) quotes the token")
        }
        #expect(!refusal.description.contains("\"n\""))
    }

    /// Fuzzing the parser with tokens damaged one byte at a time, and with cut and spliced ones:
    /// each is refused with a registered code, or (a change the decoding cannot see, such as
    /// the spare bits of a base64url character) verifies as the same SET. Nothing else.
    @Test func damagedTokensAreRefusedWithARegisteredCode() async throws {
        let material = try await Self.material()
        let verifier = Self.verifier(Published(material.jwksInitial), refetchInterval: .seconds(3600))
        let original = Array(try #require(material.tokens["es256"]).utf8)
        let jti = try await verifier.verify(String(decoding: original, as: UTF8.self)).get().jti
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/{}\"\u{0} é".utf8)
        var damaged: [[UInt8]] = []
        for _ in 0..<300 {
            var token = original
            token[Int.random(in: 0..<token.count, using: &generator)] = alphabet.randomElement(using: &generator)!
            damaged.append(token)
        }
        for cut in stride(from: 0, to: original.count, by: 17) { damaged.append(Array(original[..<cut])) }
        let parts = String(decoding: original, as: UTF8.self).split(separator: ".").map(String.init)
        let other = try #require(material.tokens["rs256"]).split(separator: ".").map(String.init)
        damaged += [[parts[0], other[1], parts[2]], [other[0], parts[1], parts[2]], [parts[0], parts[1], other[2]],
                    [parts[0], parts[1]], parts + [parts[2]]].map { Array($0.joined(separator: ".").utf8) }
        let codes: Set = ["invalid_request", "invalid_key", "invalid_issuer", "invalid_audience"]
        for token in damaged {
            switch await verifier.verify(String(decoding: token, as: UTF8.self)) {
            case .failure(let refusal): #expect(codes.contains(refusal.code), "\(refusal)")
            case .success(let event): #expect(event.jti == jti, "a damaged token verified as another SET")
            }
        }
    }

    /// A key published after start is found by fetching the keys again; unknown key ids do not
    /// make us fetch more than once an interval.
    @Test func aKeyPublishedAfterStartIsFetchedAndUnknownKidsAreRateLimited() async throws {
        let material = try await Self.material()
        let published = Published(material.jwksInitial)
        let keys = TransmitterKeys(refetchInterval: .seconds(3600)) { published.current }
        let verifier = SecurityEventTokenVerifier(issuer: Self.issuer, audience: Self.audience, keys: keys)
        #expect(try await verifier.verify(try #require(material.tokens["rs256"])).get().jti.isEmpty == false)
        #expect(await keys.fetches == 1)
        for _ in 0..<20 {
            #expect(await (try? verifier.verify(try #require(material.tokens["unknown_kid"])).get()) == nil)
        }
        #expect(await keys.fetches == 1, "a flood of unknown kids fetched the keys again within the interval")

        let rotating = TransmitterKeys(refetchInterval: .zero) { published.current }
        let rotatingVerifier = SecurityEventTokenVerifier(issuer: Self.issuer, audience: Self.audience, keys: rotating)
        let rotated = try #require(material.tokens["rotated"])
        #expect(await (try? rotatingVerifier.verify(rotated).get()) == nil, "rsa-2 is not published yet")
        published.publish(material.jwksRotated)
        #expect(try await rotatingVerifier.verify(rotated).get().jti.isEmpty == false, "rsa-2 is found once published")
    }
}

/// The transmitter's keys read from a real JWKS endpoint on loopback.
@Suite struct JWKSFetchTests {
    @Test func keysAreReadFromTheJWKSURLAndAFailedFetchKeepsThoseKnown() async throws {
        let material = try await SecurityEventTokenTests.material()
        let jwks = SecurityEventTokenTests.Published(material.jwksInitial)
        let failing = Mutex(false)
        let router = Router()
        router.get("/jwks") { _, _ -> Response in
            guard !failing.withLock({ $0 }) else { return Response(status: .internalServerError) }
            return Response(status: .ok, headers: [.contentType: "application/jwk-set+json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: jwks.current)))
        }
        try await LoopbackServer.run(router) { port in
            let url = "http://127.0.0.1:\(port)/jwks"
            #expect(JWKSFetch.problem(url: url, allowHTTP: true) == nil)
            #expect(JWKSFetch.problem(url: url, allowHTTP: false) == "must use https (plain http only with ECHORELAY_SET_ALLOW_HTTP=1)")
            #expect(JWKSFetch.problem(url: "/jwks", allowHTTP: true) == "must be an absolute URL")
            let keys = TransmitterKeys(refetchInterval: .zero, fetch: JWKSFetch.from(url))
            let verifier = SecurityEventTokenVerifier(issuer: SecurityEventTokenTests.issuer, audience: SecurityEventTokenTests.audience, keys: keys)
            #expect(try await verifier.verify(try #require(material.tokens["es256"])).get().jti.isEmpty == false)

            failing.withLock { $0 = true }
            #expect(try await verifier.verify(try #require(material.tokens["rs256"])).get().jti.isEmpty == false,
                    "known keys still verify while the endpoint fails")
            let unknown = await verifier.verify(try #require(material.tokens["rotated"]))
            #expect((try? unknown.get()) == nil)
        }
    }
}
