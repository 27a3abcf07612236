import EchoRelayCore
import Foundation
import TestSupport
import Testing

/// RFC 5849's own examples, step by step, and the signing functions built on them.
@Suite struct OAuth1SigningTests {
    // MARK: - §3.6 percent-encoding

    @Test(arguments: [
        ("", ""),
        ("AZaz09-._~", "AZaz09-._~"),
        ("a b", "a%20b"),
        ("a+b", "a%2Bb"),
        ("=&%/?#:@!$'()*,;[]", "%3D%26%25%2F%3F%23%3A%40%21%24%27%28%29%2A%2C%3B%5B%5D"),
        ("\"<>\\^`{|}", "%22%3C%3E%5C%5E%60%7B%7C%7D"),
        ("é", "%C3%A9"),
        ("ü€😀", "%C3%BC%E2%82%AC%F0%9F%98%80"),
        ("\n\u{7F}", "%0A%7F"),
    ])
    func percentEncodesUTF8BytesOutsideTheUnreservedSetInUpperCaseHex(input: String, expected: String) {
        #expect(OAuth1.percentEncode(input) == expected)
    }

    // MARK: - §3.4.1.3.1 form decoding of the query and body

    @Test func decodesTheRFCFormBodyAndQuery() throws {
        // The body and query of the §3.4.1 example: "+" is a space, "c2" has an empty value.
        let body = try OAuth1.formParameters("c2&a3=2+q")
        #expect(body.map { [$0.0, $0.1] } == [["c2", ""], ["a3", "2 q"]])
        let query = try OAuth1.queryParameters(of: "http://example.com/request?b5=%3D%253D&a3=a&c%40=&a2=r%20b")
        #expect(query.map { [$0.0, $0.1] } == [["b5", "=%3D"], ["a3", "a"], ["c@", ""], ["a2", "r b"]])
    }

    @Test func formDecodingSkipsEmptyPairsAndKeepsEverythingAfterTheFirstEquals() throws {
        let pairs = try OAuth1.formParameters("&a=1&&b==2%3d&")
        #expect(pairs.map { [$0.0, $0.1] } == [["a", "1"], ["b", "=2="]])
    }

    @Test(arguments: ["a=%", "a=%4", "a=%zz", "%G0=x", "a=%C3"])
    func formDecodingRefusesAMalformedEscapeOrNonUTF8(encoded: String) {
        #expect(throws: OAuthRequestError.self) { try OAuth1.formParameters(encoded) }
    }

    @Test func formEncodingRoundTrips() throws {
        let pairs = [("a b", "c+d"), ("é", "&="), ("empty", "")]
        let decoded = try OAuth1.formParameters(OAuth1.formEncode(pairs))
        #expect(decoded.map { [$0.0, $0.1] } == pairs.map { [$0.0, $0.1] })
    }

    // MARK: - §3.4.1.2 base string URI

    @Test(arguments: [
        // The two examples of §3.4.1.2.
        ("http://EXAMPLE.COM:80/r%20v/X?id=123", "http://example.com/r%20v/X"),
        ("https://www.example.net:8080/?q=1", "https://www.example.net:8080/"),
        // Default ports dropped only for their own scheme; scheme lower-cased; path kept as written.
        ("HTTPS://Api.Example.COM:443/1.1/Account.json", "https://api.example.com/1.1/Account.json"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com?x=1", "http://example.com/"),
        ("http://example.com/a#frag", "http://example.com/a"),
        ("http://example.com:/a", "http://example.com/a"),
        ("http://127.0.0.1:8081/verify", "http://127.0.0.1:8081/verify"),
        ("http://[::1]:8081/verify", "http://[::1]:8081/verify"),
        ("https://example.com/a;b=c/d:e@f!$'()*+,~", "https://example.com/a;b=c/d:e@f!$'()*+,~"),
    ])
    func baseStringURI(url: String, expected: String) throws {
        #expect(try OAuth1.baseStringURI(url) == expected)
    }

    @Test(arguments: [
        "", "example.com/path", "/relative", "ftp://example.com/", "http://", "http:///path",
        "http://user:pass@example.com/", "http://example.com:http/", "http://example.com:0/", "http://example.com:65536/",
        "http://exa mple.com/", "http://example.com/a b", "http://example.com/%zz", "http://example.com/?a=b c",
        "http://example.com/?a=%", "http://exämple.com/", "http://example.com/ä", "http://[::1/", "http://[]/",
    ])
    func baseStringURIRefusesWhatIsNotAPlainAbsoluteHTTPURL(url: String) {
        #expect(throws: OAuthRequestError.self) { try OAuth1.baseStringURI(url) }
    }

    // MARK: - §3.4.1.3.2 normalization and §3.4.1.1 base string

    /// The request of §3.4.1.1 and §3.4.1.3: query, header and form body parameters.
    static let exampleHeaderParameters = [
        ("oauth_consumer_key", "9djdj82h48djs9d2"), ("oauth_token", "kkk9d7dh3k39sjv7"),
        ("oauth_signature_method", "HMAC-SHA1"), ("oauth_timestamp", "137131201"), ("oauth_nonce", "7d8f3e4a"),
    ]
    static let exampleURL = "http://example.com/request?b5=%3D%253D&a3=a&c%40=&a2=r%20b"

    @Test func normalizesTheParametersOfSection3_4_1_3_2() throws {
        // The table of §3.4.1.3.1, already decoded.
        let parameters = [("b5", "=%3D"), ("a3", "a"), ("c@", ""), ("a2", "r b")] + Self.exampleHeaderParameters
            + [("c2", ""), ("a3", "2 q")]
        #expect(OAuth1.normalizedParameters(parameters) == """
            a2=r%20b&a3=2%20q&a3=a&b5=%3D%253D&c%40=&c2=&oauth_consumer_key=9djdj82h48djs9d2&oauth_nonce=7d8f3e4a\
            &oauth_signature_method=HMAC-SHA1&oauth_timestamp=137131201&oauth_token=kkk9d7dh3k39sjv7
            """)
    }

    @Test func sortsByEncodedNameThenEncodedValueInByteOrder() {
        let parameters = [("b", "2"), ("a", "z"), ("a", "Z"), ("a", "%"), ("B", "1"), ("a_", "1"), ("a1", "1")]
        // "%" encodes to "%25", which sorts before letters; "Z" before "z"; "B" before "a".
        #expect(OAuth1.normalizedParameters(parameters) == "B=1&a=%25&a=Z&a=z&a1=1&a_=1&b=2")
    }

    @Test func buildsTheSignatureBaseStringOfSection3_4_1_1() throws {
        // Query from the URL, protocol parameters from the header (with a signature, which is
        // left out), "c2&a3=2+q" from the form body.
        let header = Self.exampleHeaderParameters + [("oauth_signature", "djosJKDKJSD8743243/jdk33klY=")]
        let body = try OAuth1.formParameters("c2&a3=2+q")
        let baseString = try OAuth1.signatureBaseString(method: "post", url: Self.exampleURL, parameters: header + body)
        #expect(baseString == """
            POST&http%3A%2F%2Fexample.com%2Frequest&a2%3Dr%2520b%26a3%3D2%2520q%26a3%3Da%26b5%3D%253D%25253D%26c%2540%3D\
            %26c2%3D%26oauth_consumer_key%3D9djdj82h48djs9d2%26oauth_nonce%3D7d8f3e4a%26oauth_signature_method%3DHMAC-SHA1\
            %26oauth_timestamp%3D137131201%26oauth_token%3Dkkk9d7dh3k39sjv7
            """)
    }

    @Test func encodesACustomMethod() throws {
        #expect(try OAuth1.signatureBaseString(method: "x-my method", url: "http://a.example/", parameters: [])
            == "X-MY%20METHOD&http%3A%2F%2Fa.example%2F&")
    }

    // MARK: - §1.2: the three signed requests of the example

    struct Example: Sendable, CustomTestStringConvertible {
        let name: String
        let method: String
        let url: String
        let token: String?
        let tokenSecret: String?
        let nonce: String
        let timestamp: String
        let extra: [String: String]
        let signature: String
        var testDescription: String { name }
    }

    static let consumerKey = "dpf43f3p2l4k3l03"
    static let consumerSecret = "kd94hf93k423kf44"

    /// Values checked against the text of RFC 5849 §1.2. The first two requests are sent over
    /// HTTPS ("the client sends the following HTTPS request"), the photo request over HTTP;
    /// the scheme is part of the signed base string URI.
    static let examples = [
        Example(
            name: "temporary credentials", method: "POST", url: "https://photos.example.net/initiate",
            token: nil, tokenSecret: nil, nonce: "wIjqoS", timestamp: "137131200",
            extra: ["oauth_callback": "http://printer.example.com/ready"], signature: "74KNZJeDHnMBp0EMJ9ZHt/XKycU="
        ),
        Example(
            name: "token credentials", method: "POST", url: "https://photos.example.net/token",
            token: "hh5s93j4hdidpola", tokenSecret: "hdhd0244k9j7ao03", nonce: "walatlh", timestamp: "137131201",
            extra: ["oauth_verifier": "hfdp7dh39dks9884"], signature: "gKgrFCywp7rO0OXSjdot/IHF7IU="
        ),
        Example(
            name: "photo", method: "GET", url: "http://photos.example.net/photos?file=vacation.jpg&size=original",
            token: "nnch734d00sl2jdk", tokenSecret: "pfkkdhi9sl3r4s00", nonce: "chapoH", timestamp: "137131202",
            extra: [:], signature: "MdpQcU8iPSUjWoN/UDMsK2sui9I="
        ),
    ]

    @Test(arguments: examples)
    func signsTheRequestsOfSection1_2(example: Example) throws {
        var parameters = [
            ("oauth_consumer_key", Self.consumerKey), ("oauth_signature_method", "HMAC-SHA1"),
            ("oauth_timestamp", example.timestamp), ("oauth_nonce", example.nonce),
        ] + example.extra.map { ($0.key, $0.value) }
        if let token = example.token { parameters.append(("oauth_token", token)) }
        let baseString = try OAuth1.signatureBaseString(method: example.method, url: example.url, parameters: parameters)
        #expect(OAuth1.hmacSHA1(baseString: baseString, consumerSecret: Self.consumerSecret, tokenSecret: example.tokenSecret)
            == example.signature)
        #expect(OAuth1.isValidSignature(example.signature, baseString: baseString, consumerSecret: Self.consumerSecret,
                                        tokenSecret: example.tokenSecret))
    }

    @Test func thePhotoRequestHasTheBaseStringOfTheRFC() throws {
        let example = Self.examples[2]
        let baseString = try OAuth1.signatureBaseString(method: "GET", url: example.url, parameters: [
            ("oauth_consumer_key", Self.consumerKey), ("oauth_token", "nnch734d00sl2jdk"),
            ("oauth_signature_method", "HMAC-SHA1"), ("oauth_timestamp", "137131202"), ("oauth_nonce", "chapoH"),
        ])
        #expect(baseString == """
            GET&http%3A%2F%2Fphotos.example.net%2Fphotos&file%3Dvacation.jpg%26oauth_consumer_key%3Ddpf43f3p2l4k3l03\
            %26oauth_nonce%3DchapoH%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D137131202\
            %26oauth_token%3Dnnch734d00sl2jdk%26size%3Doriginal
            """)
    }

    @Test func buildsThePhotoRequestHeaderWithoutVersion() throws {
        let header = try OAuth1.authorizationHeader(
            method: "GET", url: Self.examples[2].url, consumerKey: Self.consumerKey, consumerSecret: Self.consumerSecret,
            token: "nnch734d00sl2jdk", tokenSecret: "pfkkdhi9sl3r4s00", nonce: "chapoH", timestamp: "137131202",
            includeVersion: false, realm: "Photos"
        )
        #expect(header == """
            OAuth realm="Photos", oauth_consumer_key="dpf43f3p2l4k3l03", oauth_nonce="chapoH", \
            oauth_signature="MdpQcU8iPSUjWoN%2FUDMsK2sui9I%3D", oauth_signature_method="HMAC-SHA1", \
            oauth_timestamp="137131202", oauth_token="nnch734d00sl2jdk"
            """)
    }

    @Test func buildsTheTemporaryCredentialsHeaderWithItsCallbackAsABodyFreeExtraParameter() throws {
        // oauth_callback travels in the header in the RFC; signed the same wherever it travels.
        let example = Self.examples[0]
        let header = try OAuth1.authorizationHeader(
            method: "POST", url: example.url, consumerKey: Self.consumerKey, consumerSecret: Self.consumerSecret,
            token: nil, tokenSecret: nil, nonce: example.nonce, timestamp: example.timestamp, includeVersion: false,
            bodyParameters: [("oauth_callback", "http://printer.example.com/ready")]
        )
        let parsed = try OAuthAuthorizationHeader.parse(header)
        #expect(parsed.signature == example.signature)
        #expect(parsed.token == nil)
    }

    // MARK: - Version, body parameters, realm, verification

    @Test func sendsAndSignsVersionByDefault() throws {
        let header = try OAuth1.authorizationHeader(
            method: "GET", url: "https://api.example.com/1.1/account.json", consumerKey: "ck", consumerSecret: "cs",
            token: "t", tokenSecret: "ts", nonce: "n", timestamp: "1"
        )
        let parsed = try OAuthAuthorizationHeader.parse(header)
        #expect(parsed.version == "1.0")
        #expect(try OAuth1.isValidSignature(of: parsed, method: "GET", url: "https://api.example.com/1.1/account.json",
                                            consumerSecret: "cs", tokenSecret: "ts"))
        // Without the version in the header, the same request signs differently.
        var withoutVersion = parsed
        withoutVersion.parameters["oauth_version"] = nil
        #expect(try !OAuth1.isValidSignature(of: withoutVersion, method: "GET", url: "https://api.example.com/1.1/account.json",
                                             consumerSecret: "cs", tokenSecret: "ts"))
    }

    @Test func verificationCatchesEveryChangeToTheSignedRequest() throws {
        let url = "https://api.example.com/1.1/account.json?include_email=true"
        let body = [("status", "héllo wörld")]
        let parsed = try OAuthAuthorizationHeader.parse(try OAuth1.authorizationHeader(
            method: "POST", url: url, consumerKey: "ck", consumerSecret: "c&s", token: "t", tokenSecret: "t s",
            nonce: "n", timestamp: "1795428930", bodyParameters: body
        ))
        func valid(_ header: OAuthAuthorizationHeader = parsed, method: String = "POST", url: String = url,
                   consumerSecret: String = "c&s", tokenSecret: String? = "t s", body: [(String, String)] = body) throws -> Bool {
            try OAuth1.isValidSignature(of: header, method: method, url: url, consumerSecret: consumerSecret,
                                        tokenSecret: tokenSecret, bodyParameters: body)
        }
        #expect(try valid())
        #expect(try valid(url: "HTTPS://API.example.com:443/1.1/account.json?include_email=true#ignored"))
        #expect(try !valid(method: "GET"))
        #expect(try !valid(url: "https://api.example.com/1.1/account.json?include_email=false"))
        #expect(try !valid(url: "https://api.example.com/1.1/account.json"))
        #expect(try !valid(url: "https://api.example.com:8443/1.1/account.json?include_email=true"))
        #expect(try !valid(url: "http://api.example.com/1.1/account.json?include_email=true"))
        #expect(try !valid(consumerSecret: "cs"))
        #expect(try !valid(tokenSecret: nil))
        #expect(try !valid(body: []))
        var tampered = parsed
        tampered.parameters["oauth_token"] = "other"
        #expect(try !valid(tampered))
        tampered = parsed
        tampered.parameters["oauth_signature_method"] = "PLAINTEXT"
        #expect(try !valid(tampered))
        tampered = parsed
        tampered.parameters["oauth_signature"] = "not base64!"
        #expect(try !valid(tampered))
        tampered.parameters["oauth_signature"] = nil
        #expect(try !valid(tampered))
    }

    @Test func theKeyKeepsItsAmpersandWhenTheTokenSecretIsMissingOrEmpty() {
        let viaNil = OAuth1.hmacSHA1(baseString: "x", consumerSecret: "a b", tokenSecret: nil)
        #expect(viaNil == OAuth1.hmacSHA1(baseString: "x", consumerSecret: "a b", tokenSecret: ""))
        // HMAC-SHA1 with the key "a%20b&" and the text "x", computed independently
        // (python3: base64.b64encode(hmac.new(b"a%20b&", b"x", "sha1").digest())).
        #expect(viaNil == "kjcqtf0jzyF7eBnRAgoWV38GqoU=")
    }

    @Test func refusesToSignWithAnEmptyKeyNonceOrABadTimestampOrRealm() {
        func sign(consumerKey: String = "ck", nonce: String = "n", timestamp: String = "1", realm: String? = nil) throws {
            _ = try OAuth1.authorizationHeader(method: "GET", url: "https://a.example/", consumerKey: consumerKey,
                                               consumerSecret: "cs", token: nil, tokenSecret: nil, nonce: nonce,
                                               timestamp: timestamp, realm: realm)
        }
        #expect(throws: OAuthRequestError.self) { try sign(consumerKey: "") }
        #expect(throws: OAuthRequestError.self) { try sign(nonce: "") }
        #expect(throws: OAuthRequestError.self) { try sign(timestamp: "") }
        #expect(throws: OAuthRequestError.self) { try sign(timestamp: "-5") }
        #expect(throws: OAuthRequestError.self) { try sign(timestamp: "1.5") }
        #expect(throws: OAuthRequestError.self) { try sign(realm: "a\"b") }
        #expect(throws: OAuthRequestError.self) { try sign(realm: "a\nb") }
    }

    @Test func randomNoncesAre32HexDigitsAndDiffer() {
        let nonces = Set((0..<100).map { _ in OAuth1.randomNonce() })
        #expect(nonces.count == 100)
        #expect(nonces.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }

    // MARK: - Extra parameters in the query

    @Test(arguments: [
        ("https://a.example/v", "https://a.example/v?x=1&name=J%C3%B6rg%20%2B%26"),
        ("https://a.example/v?a=b", "https://a.example/v?a=b&x=1&name=J%C3%B6rg%20%2B%26"),
        ("https://a.example/v?", "https://a.example/v?x=1&name=J%C3%B6rg%20%2B%26"),
        ("https://a.example/v?a=b&", "https://a.example/v?a=b&x=1&name=J%C3%B6rg%20%2B%26"),
        ("https://a.example/v#f", "https://a.example/v?x=1&name=J%C3%B6rg%20%2B%26#f"),
    ])
    func appendsExtraParametersToTheQuery(url: String, expected: String) throws {
        let extended = OAuth1.appendingQueryParameters([("x", "1"), ("name", "Jörg +&")], to: url)
        #expect(extended == expected)
        #expect(try OAuth1.queryParameters(of: extended).suffix(2).map { [$0.0, $0.1] } == [["x", "1"], ["name", "Jörg +&"]])
    }
}
