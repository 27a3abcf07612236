@testable import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// The byte-level fast paths of `EventFieldRules` give the same answer as the rules they
/// shortcut (`ReferenceFieldRules`, scalar properties and `URLComponents`), on values built
/// to sit at the edge between the two paths: ASCII next to non-ASCII, controls, white space,
/// and URLs that `URLComponents` takes, takes oddly, or refuses.
@Suite struct EventFieldRulesFastPathTests {
    @Test func everyASCIICharacterIsJudgedAsTheUnicodeRulesJudgeIt() {
        for value in 0...0x7F {
            let text = String(Unicode.Scalar(UInt8(value)))
            for candidate in [text, "a" + text + "b", "OAuth " + text, "https://a.example/" + text] {
                #expect(EventFieldRules.userIDProblem(candidate) == ReferenceFieldRules.userIDProblem(candidate), "\(value)")
                #expect(EventFieldRules.authorizationProblem(candidate) == ReferenceFieldRules.authorizationProblem(candidate), "\(value)")
                #expect(EventFieldRules.serviceProviderProblem(candidate) == ReferenceFieldRules.serviceProviderProblem(candidate), "\(value)")
            }
        }
    }

    @Test func userIDs() {
        let pieces = ["a", "Z", "0", "~", "!", " ", "\t", "\n", "\u{0}", "\u{7F}", "\u{85}", "\u{A0}", "é", "e\u{301}", "ß", "😀",
                      "\u{200B}", "\u{2028}", "\u{E000}", "\u{378}", "\r\n", String(repeating: "x", count: 63)]
        Fuzz.check("userIDFastPath", cases: 3000) { rng, c in
            let userID = (0..<rng.int(0...6)).map { _ in rng.chance(0.6) ? String(Unicode.Scalar(UInt8(rng.int(0x21...0x7E)))) : rng.pick(pieces) }.joined()
            c.input = String(reflecting: userID)
            c.check(EventFieldRules.userIDProblem(userID) == ReferenceFieldRules.userIDProblem(userID),
                    "\(String(describing: EventFieldRules.userIDProblem(userID))) != \(String(describing: ReferenceFieldRules.userIDProblem(userID)))")
        }
    }

    @Test func authorizationHeaders() {
        let pieces = ["OAuth ", "OAuth", "oauth ", " ", "\t", "\r\n", "\u{0}", "\u{1F}", "\u{7F}", "\u{85}", "\u{9F}", "\u{A0}",
                      "\u{301}", "é", "😀", "\u{2028}", "x=\"1\"", ", ", "%3D", "\""]
        Fuzz.check("authorizationFastPath", cases: 3000) { rng, c in
            var header = rng.chance(0.7) ? "OAuth " : ""
            for _ in 0..<rng.int(0...5) { header += rng.pick(pieces) }
            c.input = String(reflecting: header)
            c.check(EventFieldRules.authorizationProblem(header) == ReferenceFieldRules.authorizationProblem(header),
                    "\(String(describing: EventFieldRules.authorizationProblem(header))) != \(String(describing: ReferenceFieldRules.authorizationProblem(header)))")
        }
    }

    /// The fast path never accepts a URL that `URLComponents` refuses or gives an empty scheme
    /// or host, and the rule as a whole answers as before; the fast path does take the
    /// ordinary ones, or it would be no shortcut.
    @Test func serviceProviderURLs() async {
        await offTheConcurrencyPool {
            var fast = 0
            Fuzz.check("serviceProviderFastPath", cases: 20_000) { rng, c in
                let url = URLPieces.random(&rng)
                c.input = String(reflecting: url)
                let components = URLComponents(string: url)
                let absolute = components?.scheme?.isEmpty == false && components?.host?.isEmpty == false
                if ServiceProviderURL.isCertainlyAbsolute(url) {
                    fast += 1
                    c.check(absolute, "the fast path took a URL that URLComponents does not read as absolute: \(String(describing: components))")
                }
                c.check(EventFieldRules.serviceProviderProblem(url) == ReferenceFieldRules.serviceProviderProblem(url),
                        "\(String(describing: EventFieldRules.serviceProviderProblem(url))) != \(String(describing: ReferenceFieldRules.serviceProviderProblem(url)))")
            }
            #expect(fast > 2000, "the fast path took \(fast) URLs")
            #expect(ServiceProviderURL.isCertainlyAbsolute("https://api.example.com/1.1/account/verify_credentials.json"))
            #expect(ServiceProviderURL.isCertainlyAbsolute("http://127.0.0.1:8080/verify?a=%C3%A9&b=1"))
            // Punycode labels go the slow way: ICU may refuse them, and then the host is nil.
            #expect(!ServiceProviderURL.isCertainlyAbsolute("https://xn--zz.example/x"))
            #expect(EventFieldRules.serviceProviderProblem("https://xn--zz.example/x") != nil)
        }
    }

    @Test func phoneNumbers() {
        for phone in ["", "+", "+1", "+12", "+0123", "+123456789012345", "+1234567890123456", "12345", "++1234", "+12 34",
                      "+١٢٣٤", "+1234\u{0}", "+１２３", "+9", "+99"] {
            #expect(EventFieldRules.phoneNumberProblem(phone) == ReferenceFieldRules.phoneNumberProblem(phone), "\(phone)")
        }
    }
}

/// URLs put together from pieces that `URLComponents` treats in every way: well-formed ones,
/// and schemes, authorities, hosts, ports, paths and queries that are odd, refused, re-encoded
/// or decoded by IDNA; now and then with one more character anywhere.
enum URLPieces {
    static let schemes = ["https", "https", "http", "HTTPS", "h", "x", "", "1http", "ht-tp", "h+s", "h.s", "mailto", "file", "tel",
                          "http+unix", "addressbook", "é", "ht tp"]
    static let separators = ["://", "://", "://", ":/", ":", "//", ":///", "://user@", "://u:p@", "://@", ":\\\\"]
    static let labels = ["api", "example", "com", "a", "z9", "0", "127", "a-b", "-a", "a-", "a--b", "ab--cd", "xn--zz", "xn--nxasmq6b",
                         "XN--ZZ", "EXAMPLE", "localhost", "_a", "a_b", "ü", "%41", "a%2", "", "a b", "~", "a!", "a$b", "a;b",
                         String(repeating: "a", count: 63), String(repeating: "b", count: 64)]
    static let literals = ["[::1]", "[v1.x]", "[::1%25en0]", "[::1%en0]", "[::1", "::1]", "[]", "[127.0.0.1]"]
    static let ports = ["", "", "", ":", ":0", ":443", ":8080", ":65535", ":99999", ":123456", ":a", ":44a", "::", ":-1"]
    static let paths = ["", "/", "/1.1/account/verify_credentials.json", "/v", "/a b", "/%", "/%zz", "/%2F", "/%c3%a9", "/é", "/a\"b",
                        "/a<b>", "/a|b", "/a{b}", "/a\\b", "/a^b", "/a`b", "//x", "/.file/id=1", "/a#b", "/@x:y", "/!$&'()*+,;=", "/[x]"]
    static let queries = ["", "", "?", "?a=1&b=%C3%A9", "?a b", "?x=[1]", "??", "?/?", "?%", "?é"]
    static let fragments = ["", "", "", "#", "#f", "#a b", "#%"]
    static let extras: [Character] = [" ", "\t", "\n", "\u{0}", "\u{7F}", "\u{85}", "\u{A0}", "é", "😀", "%", "#", "?", "/", ":", "@",
                                      "[", "]", "\\", "\"", ".", "-", "_", "~", "A"]

    static func random(_ rng: inout SplitMix64) -> String {
        // Half start well-formed, so that the edge cases below sit next to good URLs.
        let wellFormed = rng.chance(0.5)
        func piece(_ good: [String], _ any: [String]) -> String { wellFormed && rng.chance(0.9) ? rng.pick(good) : rng.pick(any) }
        var host: String
        if !wellFormed && rng.chance(0.1) {
            host = rng.pick(literals)
        } else {
            host = (0..<rng.int(1...4)).map { _ in
                rng.chance(wellFormed ? 0.1 : 0.5) ? rng.pick(labels) : String((0..<rng.int(1...12)).map { _ in rng.pick(Array("abcdefghijklmnopqrstuvwxyz0123456789-")) })
            }.joined(separator: ".")
            if rng.chance(0.05) { host += "." }
            if rng.chance(0.02) { host = String(repeating: "abcdefghi.", count: 26) + "com" }  // 263 bytes
        }
        var url = piece(["https", "http", "HTTPS"], schemes) + piece(["://"], separators) + host + piece(["", ":443", ":8080"], ports)
            + (0..<rng.int(0...2)).map { _ in piece(["/", "/v", "/1.1/account/verify_credentials.json", "/%2F"], paths) }.joined()
            + piece(["", "?a=1&b=%C3%A9"], queries) + piece([""], fragments)
        if rng.chance(0.2) {
            var characters = Array(url)
            characters.insert(rng.pick(extras), at: rng.int(0...characters.count))
            url = String(characters)
        }
        return url
    }
}
