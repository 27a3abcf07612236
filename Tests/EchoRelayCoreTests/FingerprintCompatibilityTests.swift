import EchoRelayCore
import Foundation
import Testing

/// An event's fingerprint is stored with it, and a provider that retries the event later is
/// answered 409 if the retry's fingerprint differs. So the fingerprint of a given body must
/// never change, whatever the parser: these are the fingerprints bodies had when they were
/// first pinned, and every later parser must give the same.
///
/// How the expected values were obtained: by running this suite against the parser of commit
/// adef0c6 (`JSONValue.parse` then SHA-256 of `JSONValue.canonicalEncoding()`, that is
/// `JSONDecoder` and `JSONEncoder` with `.sortedKeys, .withoutEscapingSlashes`, Swift 6.3.1 on
/// Linux) and copying what it computed. They are not to be edited to make a test pass.
@Suite struct FingerprintCompatibilityTests {
    /// A valid token.rotated event with `extra` (",\"key\":value…") added to its top object.
    static func event(_ extra: String = "") -> String {
        #"{"id":"evt_123","type":"token.rotated","user_id":"u42","occurred_at":"2026-11-24T10:00:00Z","echo":{"service_provider":"https://api.example.com/1.1/account/verify_credentials.json","authorization":"OAuth oauth_token=\"t\""}"#
            + extra + "}"
    }

    static let benchmarkTokenRotated =
        #"{"id":"evt_123","type":"token.rotated","user_id":"u42","occurred_at":"2026-11-24T10:00:00Z","data":{},"echo":{"service_provider":"https://api.example.com/1.1/account/verify_credentials.json","authorization":"OAuth oauth_consumer_key=\"ck\", oauth_nonce=\"abc\", oauth_signature=\"s%3D\", oauth_signature_method=\"HMAC-SHA1\", oauth_timestamp=\"1795428930\", oauth_token=\"t-u42\", oauth_version=\"1.0\""}}"#

    /// (name, body, SHA-256 of the body's canonical form in hex, as pinned).
    static let pinned: [(String, String, String)] = [
        ("benchmark token.rotated", benchmarkTokenRotated,
         "6b3bd488f26928fb02cf5ab77aa1256e9df5d32e2ee1b0ce15d6c6f5a62e68a6"),
        ("benchmark phone.changed",
         #"{"id":"evt_124","type":"phone.changed","user_id":"u42","occurred_at":"2026-11-24T10:00:00Z","data":{"phone_number":"+15555550100"},"echo":{"service_provider":"https://api.example.com/1.1/account/verify_credentials.json","authorization":"OAuth oauth_consumer_key=\"ck\", oauth_nonce=\"abc\", oauth_signature=\"s%3D\", oauth_signature_method=\"HMAC-SHA1\", oauth_timestamp=\"1795428930\", oauth_token=\"t-u42\", oauth_version=\"1.0\""}}"#,
         "065345bf28804a6dbded488edb97d8f960c6a694b1e241118bb716f9ad285bbe"),
        ("benchmark token.rotated, keys reordered, white space between every token",
         " \t{\r\n\"echo\" : { \"authorization\":\"OAuth oauth_consumer_key=\\\"ck\\\", oauth_nonce=\\\"abc\\\", oauth_signature=\\\"s%3D\\\", oauth_signature_method=\\\"HMAC-SHA1\\\", oauth_timestamp=\\\"1795428930\\\", oauth_token=\\\"t-u42\\\", oauth_version=\\\"1.0\\\"\" ,\n\"service_provider\"\t:\"https:\\/\\/api.example.com\\/1.1\\/account\\/verify_credentials.json\"} , \"data\" : { } ,\"occurred_at\":\"2026-11-24T10:00:00Z\",\"user_id\":\"u42\",\"type\":\"token.rotated\",\"id\":\"evt_123\"\n}\r\n ",
         "6b3bd488f26928fb02cf5ab77aa1256e9df5d32e2ee1b0ce15d6c6f5a62e68a6"),
        ("integers", event(#","x":[0,-1,42,-0,7,-7,1000000,9223372036854775807,-9223372036854775808]"#),
         "203b8b8ffc65e0a4780588af54c0a31a7672fabe49345f0b7a594cd6e08e51ae"),
        ("decimals", event(#","x":[1.5,-0.25,0.1,12.50,3.0,100.0,-0.0,0.30000000000000004]"#),
         "e05febb7feb63594d83ec4467d9373755acd0bb29d9f1b1cca6b98e50847b512"),
        ("exponents", event(#","x":[1e3,2E-2,1E+2,3.0e0,1e-7,5e-324,1.7976931348623157e308,1e-400,-1e2]"#),
         "02cedb8f0046014f63dedfe241d7673f71600dd8c4b87f1332a2c66112dc055c"),
        ("big values", event(#","x":[9223372036854775808,-9223372036854775809,18446744073709551616,123456789012345678901234567890]"#),
         "bb39c8ae7c30c67d29a41103e14370e17f0d6271c31d394aefba092047a51d75"),
        ("short escapes", event(#","x":"a\nb\"c\\d\/e\bf\fg\rh\ti""#),
         "637e95b2e50beea4a66427f00850bfe4d75f97ee957f51fe37460f25dfe9043b"),
        ("unicode escapes", event(#","x":"\u00e9\u00E9\u0041\u002f\u005c\u0022\u005C\u0020""#),
         "cbfed649e23f2a84c0ba3444d6225c8fac03c7a457627fe1786170c68a4a3a58"),
        ("surrogate pairs", event(#","x":"\ud83d\ude00\uD83D\uDE00\udbff\udfff\ud800\udc00""#),
         "cfd0401c486748c93da9fe5f1be1942256f2cb59d8992b6aba3f4d94f84a3ab0"),
        ("control characters, DEL and separators", event(",\"x\":\"\\u0000\\u0001\\u0007\\u000b\\u001f\\u007f\\u0080\\u009f\\u2028\\u2029\\ufeff\u{7F}\u{85}\u{2028}\""),
         "f3d2a34a10298396ee5844b199093c91ebb5ccd0406c414b4014c20dbd287184"),
        ("non-ASCII text, raw", event(",\"x\":\"héllo wörld 日本語 😀 e\u{301} \u{10FFFF}\""),
         "888bf3b03c6c3e2ff4409ed73fc2ae6c4f7e17a58121a5571b1eba14d4bbe715"),
        ("non-ASCII user id", #"{"id":"evt_125","type":"token.rotated","user_id":"usér-ß:42","occurred_at":"2026-11-24T10:00:00Z","echo":{"service_provider":"https://a.example/v","authorization":"OAuth x=1"}}"#,
         "81cf3f959c4de5cb282769e0b90f5249d868f116b513f80e8c561b44deb3f22b"),
        ("duplicate keys: the first is kept", event(#","x":"first","x":"second","y":{"a":1,"a":2}"#),
         "2af4c7db211c95933048cb0c670b740d992c9d90753bda38563cbb890d757101"),
        ("a duplicate known field: the first is kept", event(#","type":"phone.changed","echo":{}"#),
         "d4c97de1809be3d61ddbbd5f6305619b14a927c55a7a07fd65f2bd76c3e778a2"),
        ("keys that sort by their UTF-8 bytes", event(#","x":{"b":1,"a":2,"B":3,"_":4,"aa":5,"a b":6,"é":7,"z":8,"a\n":9,"a!":10,"":11,"\u0000":12,"~":13,"😀":14,"ÿ":15}"#),
         "93d066c6b0c9945aa018f5ba936b2bc8b21f72771a8e9993e6aa811cd51817f5"),
        ("escaped keys", event(#","\u0078\/y":"1","x\"":"2","x\\":"3""#),
         "ef935408dc474cd4ff5aa9b763330e98ba9d41094cd6830bd6bec7b8bddc7997"),
        ("an escaped known key", #"{"\u0069d":"evt_126","type":"token.rotated","user_id":"u42","occurred_at":"2026-11-24T10:00:00Z","echo":{"service_provider":"https://a.example/v","authorization":"OAuth x=1"}}"#,
         "d6357a76ee2ac6ba4bb11aff1b7608e4bd4266d45619c919e031a75bf36e151b"),
        ("canonically equivalent keys: the first is kept", event(",\"x\":{\"\u{212A}\":\"kelvin\",\"K\":\"k\",\"e\u{301}\":\"decomposed\",\"\u{E9}\":\"precomposed\"}"),
         "dad3311cad751e561011dbf14b3401af4e51e4599d818009813a978c84800253"),
        ("nested objects and arrays", event(#","x":{"b":[1,{"d":null,"c":true}],"a":{"z":false,"y":[]},"c":[[],[{}],[[null]],["s",{"k":"v"}]]}"#),
         "287ecffe859591ff8e100ad8113382e5fc04ae67ed182bb44b49905924a26d80"),
        ("empty containers and literals", event(#","a":{},"b":[],"c":null,"d":true,"e":false,"f":"""#),
         "45bcb4ec66d5af260cae590ba41eb3d955e764abe8692c870f2482964dbd3206"),
        ("data null", event(#","data":null"#),
         "21bcc615073f9f6138b7c9ffaa143dfb7900442b0b164a606f177a2c6b1eee5c"),
        ("data with extra fields", #"{"id":"evt_127","type":"phone.changed","user_id":"u42","occurred_at":"2026-11-24T10:00:00Z","data":{"z":"1","phone_number":"+15555550100","a":["x",{"b":"c"}]},"echo":{"realm":"r","service_provider":"https://a.example/v","authorization":"OAuth x=1"}}"#,
         "2ce98bcad65cc1b418b7a3c1f1eeb887e4fcef6f43d52df4f1a1aac26320646c"),
        ("a long string", event(#","x":""# + String(repeating: "abcdefghij", count: 100) + #"""#),
         "f0981942e3f76c3769f848e533ca78d91ed28330cc619a08eabf1f25ecf0633f"),
    ]

    static func fingerprint(_ body: String) -> String {
        do throws(EventParseError) {
            return try IncomingEvent.parse(body: Array(body.utf8)).fingerprint.map { String(format: "%02x", $0) }.joined()
        } catch {
            return "refused"
        }
    }

    @Test(arguments: pinned.indices)
    func fingerprintIsAsPinned(index: Int) {
        let (name, body, expected) = Self.pinned[index]
        #expect(Self.fingerprint(body) == expected, "\(name)")
    }
}
