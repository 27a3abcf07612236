import EchoRelayCore
import TestSupport
import Testing

/// `Authorization: OAuth …` parsing (RFC 5849 §3.5.1) and building, and the promise that an
/// error never repeats a credential.
@Suite struct OAuth1HeaderTests {
    /// The photo request of RFC 5849 §1.2, as the RFC prints it (folded lines joined by spaces).
    static let rfcPhotoHeader = """
        OAuth realm="Photos", oauth_consumer_key="dpf43f3p2l4k3l03", oauth_token="nnch734d00sl2jdk", \
        oauth_signature_method="HMAC-SHA1", oauth_timestamp="137131202", oauth_nonce="chapoH", \
        oauth_signature="MdpQcU8iPSUjWoN%2FUDMsK2sui9I%3D"
        """

    @Test func parsesTheRFCPhotoRequestHeader() throws {
        let header = try OAuthAuthorizationHeader.parse(Self.rfcPhotoHeader)
        #expect(header.realm == "Photos")
        #expect(header.parameters["realm"] == nil)
        #expect(header.consumerKey == "dpf43f3p2l4k3l03")
        #expect(header.token == "nnch734d00sl2jdk")
        #expect(header.signatureMethod == "HMAC-SHA1")
        #expect(header.timestamp == "137131202")
        #expect(header.nonce == "chapoH")
        #expect(header.signature == "MdpQcU8iPSUjWoN/UDMsK2sui9I=")
        #expect(header.version == nil)
        #expect(header.parameters.count == 6)
        // And it verifies: the header as the RFC prints it, against the request as the RFC sends it.
        #expect(try OAuth1.isValidSignature(
            of: header, method: "GET", url: "http://photos.example.net/photos?file=vacation.jpg&size=original",
            consumerSecret: "kd94hf93k423kf44", tokenSecret: "pfkkdhi9sl3r4s00"
        ))
    }

    @Test func parsesTheSection3_5_1ExampleWithItsCallbackAndVersion() throws {
        let header = try OAuthAuthorizationHeader.parse("""
            OAuth realm="Example", oauth_consumer_key="0685bd9184jfhq22", oauth_token="ad180jjd733klru7", \
            oauth_signature_method="HMAC-SHA1", oauth_signature="wOJIO9A2W5mFwDgiDvZbTSMK%2FPY%3D", \
            oauth_timestamp="137131200", oauth_nonce="4572616e48616d6d65724c61686176", oauth_version="1.0", \
            oauth_callback="http%3A%2F%2Fprinter.example.com%2Fready"
            """)
        #expect(header.signature == "wOJIO9A2W5mFwDgiDvZbTSMK/PY=")
        #expect(header.version == "1.0")
        #expect(header.parameters["oauth_callback"] == "http://printer.example.com/ready")
    }

    @Test(arguments: [
        #"OAuth oauth_token="a""#,
        #"oauth oauth_token="a""#,
        #"OAUTH oauth_token="a""#,
        "  OAuth \t oauth_token = \"a\" ,, , ",
        #"OAuth ,oauth_token="a","#,
        "OAuth\toauth_token=\"a\"",
        #"OAuth oauth%5Ftoken="a""#,
        #"OAuth oauth_token="%61""#,
    ])
    func acceptsTheSyntaxVariantsOfRFC7235(header: String) throws {
        #expect(try OAuthAuthorizationHeader.parse(header).parameters == ["oauth_token": "a"])
    }

    @Test func decodesValuesButKeepsPlusAndLowerCaseEscapes() throws {
        let header = try OAuthAuthorizationHeader.parse(#"OAuth a="x+y%2b%2Fz%20%C3%A9", b="", Realm="R%20""#)
        #expect(header.parameters == ["a": "x+y+/z é", "b": ""])
        #expect(header.realm == "R%20")
    }

    // MARK: - Errors, and that they never repeat a value

    /// The values in these headers are all this marker (or contain it); no error may repeat it.
    static let marker = "S3CR3T"

    @Test(arguments: [
        ("", "empty"),
        ("   \t ", "empty"),
        ("Bearer S3CR3T", "OAuth scheme"),
        ("S3CR3T", "OAuth scheme"),
        ("OAuthS3CR3T=\"x\"", "OAuth scheme"),
        ("OAuth", "no parameters"),
        ("OAuth   ", "no parameters"),
        ("OAuth , ,", "no parameters"),
        ("OAuth,oauth_token=\"S3CR3T\"", "followed by a space"),
        ("OAuth oauth_token=\"S3CR3T\", oauth_token=\"S3CR3T2\"", "\"oauth_token\" appears more than once"),
        ("OAuth oauth_token=\"S3CR3T\", oauth%5Ftoken=\"S3CR3T\"", "appears more than once"),
        ("OAuth realm=\"S3CR3T\", realm=\"S3CR3T\"", "realm appears more than once"),
        ("OAuth oauth_token=S3CR3T", "\"oauth_token\" is not quoted"),
        ("OAuth oauth_token='S3CR3T'", "\"oauth_token\" is not quoted"),
        ("OAuth oauth_token=", "\"oauth_token\" is not quoted"),
        ("OAuth oauth_token=\"S3CR3T", "\"oauth_token\" has no closing quote"),
        ("OAuth oauth_token=\"S3CR3T%\"", "\"oauth_token\" has a malformed percent escape"),
        ("OAuth oauth_token=\"S3CR3T%4\"", "\"oauth_token\" has a malformed percent escape"),
        ("OAuth oauth_token=\"S3CR3T%zz\"", "\"oauth_token\" has a malformed percent escape"),
        ("OAuth oauth_token=\"S3CR3T%C3\"", "\"oauth_token\" is not UTF-8"),
        ("OAuth oauth%zz=\"S3CR3T\"", "name of parameter 1 has a malformed percent escape"),
        ("OAuth oauth_token=\"S3C\\\"R3T\"", "\"oauth_token\" has a backslash"),
        ("OAuth oauth_token=\"S3CR3T\" oauth_nonce=\"S3CR3T\"", "parameter 1 is followed by text"),
        ("OAuth oauth_token=\"S3CR3T\"S3CR3T", "parameter 1 is followed by text"),
        ("OAuth oauth_nonce=\"n\", S3CR3T", "parameter 2 is not of the form"),
        ("OAuth oauth_nonce=\"n\", S3CR3T, x=\"y\"", "parameter 2 is not of the form"),
        ("OAuth oauth_nonce=\"n\", =\"S3CR3T\"", "parameter 2 is not of the form"),
        ("OAuth oauth_nonce=\"n\", \"S3CR3T\"", "parameter 2 is not of the form"),
        ("OAuth oauth_token=\"S3CR3T\"\r\nX-Injected: S3CR3T", "control character"),
        ("OAuth oauth_token=\"S3CR3T\u{0}\"", "control character"),
        ("OAuth oauth_token=\"S3CR3Té\"", "non-ASCII"),
    ])
    func refusesMalformedHeadersWithoutRepeatingAValue(header: String, expectedReason: String) throws {
        let error = try #require(throws: OAuthHeaderError.self) { try OAuthAuthorizationHeader.parse(header) }
        #expect(error.description.contains(expectedReason), "\(error.description)")
        #expect(!error.description.contains(Self.marker))
        #expect(!error.description.contains("R3T"))
        #expect(!String(reflecting: error).contains(Self.marker))
    }

    @Test func aLongNameIsCutShortInAnError() throws {
        let name = String(repeating: "n", count: 200)
        let error = try #require(throws: OAuthHeaderError.self) {
            try OAuthAuthorizationHeader.parse("OAuth \(name)=unquoted")
        }
        #expect(error.description.count < 150)
    }

    // MARK: - Building and round trips

    @Test func rendersRealmFirstThenSortedEncodedParameters() {
        let header = OAuthAuthorizationHeader(
            parameters: ["oauth_token": "t/k", "b": "x y", "a": "é", "oauth_consumer_key": "ck"], realm: "R"
        )
        #expect(header.headerValue
            == #"OAuth realm="R", a="%C3%A9", b="x%20y", oauth_consumer_key="ck", oauth_token="t%2Fk""#)
    }

    @Test(arguments: [
        ["oauth_consumer_key": "ck"],
        ["oauth_consumer_key": "dpf43f3p2l4k3l03", "oauth_signature": "MdpQcU8iPSUjWoN/UDMsK2sui9I=", "oauth_nonce": "n"],
        ["oauth_token": "", "weird name": "\"quoted\" \\ back, comma=equals&amp", "ü": "😀\u{7F}\n\t"],
    ])
    func buildThenParseGivesTheSameParameters(parameters: [String: String]) throws {
        for realm in [nil, "Photos", "http://server.example.com/"] as [String?] {
            let header = OAuthAuthorizationHeader(parameters: parameters, realm: realm)
            #expect(try OAuthAuthorizationHeader.parse(header.headerValue) == header)
        }
    }

    @Test func aSignedHeaderRoundTripsAndStaysValid() throws {
        let url = "https://api.example.com/1.1/account.json?x=%C3%A9+1"
        let value = try OAuth1.authorizationHeader(
            method: "GET", url: url, consumerKey: "c k", consumerSecret: "cs", token: "t/=+", tokenSecret: "ts",
            nonce: "n n", timestamp: "1795428930", realm: "Echo"
        )
        let header = try OAuthAuthorizationHeader.parse(value)
        #expect(header.headerValue == value)
        #expect(header.consumerKey == "c k")
        #expect(header.token == "t/=+")
        #expect(header.nonce == "n n")
        #expect(header.timestamp == "1795428930")
        #expect(header.version == "1.0")
        #expect(header.signatureMethod == "HMAC-SHA1")
        #expect(Set(header.parameters.keys) == [
            "oauth_consumer_key", "oauth_nonce", "oauth_signature", "oauth_signature_method", "oauth_timestamp",
            "oauth_token", "oauth_version",
        ])
        #expect(try OAuth1.isValidSignature(of: header, method: "GET", url: url, consumerSecret: "cs", tokenSecret: "ts"))
    }

    @Test func descriptionsNameParametersButHideValues() throws {
        let header = try OAuthAuthorizationHeader.parse(Self.rfcPhotoHeader)
        for text in [String(describing: header), String(reflecting: header), "\(header)"] {
            #expect(text.contains("oauth_token"))
            #expect(!text.contains("nnch734d00sl2jdk"))
            #expect(!text.contains("MdpQcU8i"))
            #expect(!text.contains("dpf43f3p2l4k3l03"))
        }
    }
}
