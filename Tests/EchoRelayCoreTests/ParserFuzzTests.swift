import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// Property-based fuzz tests for the two parsers of outside input (issue 7, "Hostile input"):
/// the ingest validator (`IncomingEvent.parse(body:)`) and the `Authorization: OAuth …` header
/// parser (`OAuthAuthorizationHeader.parse(_:)`).
///
/// Every property runs a bounded number of cases from a seeded generator, so a run is
/// reproducible: a failure names the property, the case index, the seed and the input.
/// `ECHORELAY_FUZZ_SEED=<decimal or 0x-hex>` runs other cases; `ECHORELAY_FUZZ_SCALE=<n>`
/// runs n times as many (for a longer local run); `ECHORELAY_FUZZ_SHOW=<n>` records the
/// first n failing cases of a property in full (3 by default).
@Suite struct ParserFuzzTests {
    // MARK: - Ingest: round trips

    /// Bodies built from random valid field values (random key order, spacing, string escapes,
    /// unknown extra fields with odd but valid JSON in them) parse to exactly those values;
    /// a timestamp outside years 1–9999 (after its offset) is refused, naming only `occurred_at`.
    /// Key order, spacing and escapes do not change the fingerprint; another id does.
    @Test func validEventBodiesRoundTrip() async {
        await offTheConcurrencyPool {
            var outcomes = (accepted: 0, outOfRange: 0)
            Fuzz.check("validEventBodiesRoundTrip", cases: 300) { rng, c in
                let spec = EventSpec.random(&rng)
                let body = Array(JSONText.write(spec.tree(&rng), &rng).utf8)
                c.input = Fuzz.show(body)
                let result = Result { () throws(EventParseError) in try IncomingEvent.parse(body: body) }

                guard spec.occurredAt.inRange else {
                    outcomes.outOfRange += 1
                    c.check(result.failure == .invalidFields([FieldProblem(field: "occurred_at", reason: TextRules.timeRangeReason)]),
                            "a timestamp outside years 1-9999 (\(spec.occurredAt.text)) must be refused naming only occurred_at, got \(result)")
                    return
                }
                guard case .success(let event) = result else {
                    c.check(false, "a valid body was refused: \(result)")
                    return
                }
                outcomes.accepted += 1
                c.check(event.id == spec.id, "id \(String(reflecting: event.id)) != \(String(reflecting: spec.id))")
                c.check(event.type == spec.type, "type \(event.type) != \(spec.type)")
                c.check(event.userID.unicodeScalars.elementsEqual(spec.userID.unicodeScalars),
                        "user_id \(String(reflecting: event.userID)) != \(String(reflecting: spec.userID))")
                c.check(spec.occurredAt.matches(event.occurredAt),
                        "occurred_at \(spec.occurredAt.text) parsed to \(event.occurredAt.timeIntervalSince1970), expected \(spec.occurredAt.seconds)")
                c.check(event.phoneNumber == spec.phoneNumber, "phone \(String(describing: event.phoneNumber)) != \(String(describing: spec.phoneNumber))")
                if let token = spec.accessToken {
                    c.check(event.echo == nil && event.oauth2?.accessToken.revealed == token, "access_token differs from the one sent")
                } else {
                    c.check(event.oauth2 == nil && event.echo?.serviceProvider == spec.serviceProvider,
                            "service_provider \(String(describing: event.echo?.serviceProvider)) != \(spec.serviceProvider)")
                    c.check(event.echo?.authorization.revealed == spec.authorization, "authorization differs from the one sent")
                }
                for violation in Invariants.violations(of: event, secret: spec.secret) { c.check(false, violation) }

                // Same document, other key order, spacing and escapes: same fingerprint.
                let again = Array(JSONText.write(spec.tree(&rng), &rng).utf8)
                if let other = try? IncomingEvent.parse(body: again) {
                    c.check(other.fingerprint == event.fingerprint,
                            "the fingerprint changed with key order or spacing; second body: \(Fuzz.show(again))")
                } else {
                    c.check(false, "the same event written another way was refused: \(Fuzz.show(again))")
                }
                // Another id: another fingerprint.
                var changed = spec
                changed.id = spec.id.count < 128 ? spec.id + "x" : String(spec.id.dropLast()) + (spec.id.hasSuffix("x") ? "y" : "x")
                if let other = try? IncomingEvent.parse(body: Array(JSONText.write(changed.tree(&rng), &rng).utf8)) {
                    c.check(other.fingerprint != event.fingerprint, "another id gave the same fingerprint")
                } else {
                    c.check(false, "the event with id \(changed.id) was refused")
                }
            }
            // The generator must reach both outcomes, or the property above proves little.
            #expect(outcomes.accepted > 250 && outcomes.outOfRange > 0, "\(outcomes)")
        }
    }

    // MARK: - Ingest: hostile bodies

    /// Valid bodies with random structural mutations (deleted, duplicated and renamed keys,
    /// wrong types, huge numbers, deep nesting, NUL and control characters, lone surrogate
    /// escapes, overlong strings, bad timestamps) and then, often, byte-level damage (flips,
    /// truncation, inserted NUL/control/invalid UTF-8 bytes): the parser never crashes, and
    /// each body either parses into an event that keeps every promise of the validator, or is
    /// refused with `EventParseError` whose text names the body or a known field, and never
    /// repeats the OAuth credential.
    @Test func mutatedEventBodiesParseOrFailCleanly() async {
        await offTheConcurrencyPool {
            var tally = OutcomeTally()
            Fuzz.check("mutatedEventBodiesParseOrFailCleanly", cases: 800) { rng, c in
                let spec = EventSpec.random(&rng)
                let body = Mutate.eventBody(spec, &rng)
                Ingest.checkOutcome(body, secret: spec.secret, &c, tally: &tally)
            }
            #expect(tally.accepted > 50 && tally.invalidFields > 100 && tally.notObject > 0
                    && tally.notJSON > 100 && tally.notUTF8 > 50, "\(tally)")
        }
    }

    /// A valid event with one field's value swapped for a hostile one (NUL, controls, white
    /// space, format and private-use characters, lengths around the limits, damaged timestamps,
    /// other fields' values, other JSON types): accepted, with exactly that value, when the
    /// field's documented rule allows it — judged here by an independent oracle — and
    /// otherwise refused naming that field alone.
    @Test func oneHostileFieldIsJudgedOnItsOwn() async {
        await offTheConcurrencyPool {
            var outcomes = (accepted: 0, refused: 0)
            Fuzz.check("oneHostileFieldIsJudgedOnItsOwn", cases: 600) { rng, c in
                var spec = EventSpec.random(&rng)
                while !spec.occurredAt.inRange { spec.occurredAt = Timestamp.random(&rng) }
                let field = rng.pick(spec.fields)
                let text = FieldOracle.hostileString(for: field, &rng)
                let value: JSONTree = rng.chance(0.15) ? rng.pick([.null, .bool(true), .raw("12"), .array([.string(text)]), .object([])]) : .string(text)
                let body = Array(JSONText.write(spec.tree(&rng, replacing: field, with: value), &rng).utf8)
                c.input = "\(field) := \(String(reflecting: text)) in \(Fuzz.show(body))"

                var expectedFields: [String] = []
                if case .string = value, FieldOracle.isValid(field, text) {
                    // A valid new type may still ask for what the event lacks.
                    if field == "type", text == EventType.phoneChanged.rawValue, spec.phoneNumber == nil {
                        expectedFields = [spec.dataForm == 2 ? "data.phone_number" : "data"] // an object without it, or no object
                    }
                } else {
                    expectedFields = [field]
                }
                let result = Result { () throws(EventParseError) in try IncomingEvent.parse(body: body) }
                switch result {
                case .success(let event):
                    outcomes.accepted += 1
                    c.check(expectedFields.isEmpty, "accepted, but \(field) should be refused")
                    if let kept = FieldOracle.value(of: field, in: event) {
                        c.check(kept.unicodeScalars.elementsEqual(text.unicodeScalars), "\(field) was not kept as sent: \(String(reflecting: kept))")
                    } else if let expected = RFC3339Oracle.instant(text) {
                        c.check(abs(event.occurredAt.timeIntervalSince1970 - expected) < 0.000_1,
                                "occurred_at parsed to \(event.occurredAt.timeIntervalSince1970), expected \(expected)")
                    }
                    for violation in Invariants.violations(of: event, secret: spec.secret) { c.check(false, violation) }
                case .failure(let error):
                    outcomes.refused += 1
                    guard case .invalidFields(let problems) = error else {
                        c.check(false, "refused as \(error), expected problems with \(expectedFields)")
                        return
                    }
                    c.check(problems.map(\.field) == expectedFields, "refused naming \(problems), expected \(expectedFields)")
                    c.check(!problems.description.contains(spec.secret), "a problem repeats the OAuth credential")
                }
            }
            #expect(outcomes.accepted > 40 && outcomes.refused > 400, "\(outcomes)")
        }
    }

    /// Random bytes, and random text over the JSON alphabet: same promises as above.
    @Test func randomBytesParseOrFailCleanly() async {
        await offTheConcurrencyPool {
            var tally = OutcomeTally()
            Fuzz.check("randomBytesParseOrFailCleanly", cases: 2000) { rng, c in
                var body: [UInt8]
                switch rng.int(0...2) {
                case 0:
                    body = (0..<rng.int(0...256)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                case 1:
                    let alphabet = Array(#"{}[]{}[]"":,,::0123456789-+.eE truefalsnul\u00 "id""type""echo""data"""#.utf8) + [0, 0x0A, 0xC3, 0xA9, 0xFF]
                    body = (0..<rng.int(0...256)).map { _ in rng.pick(alphabet) }
                default:
                    // An object of random keys (known ones among them) and random values.
                    let keys = Ingest.knownFields.map { String($0.split(separator: ".").last!) } + ["x", "", "\u{0}"]
                    let pairs = (0..<rng.int(0...8)).map { _ in (rng.pick(keys), JSONTree.random(&rng, depth: 3)) }
                    body = Array(JSONText.write(.object(pairs), &rng).utf8)
                }
                Ingest.checkOutcome(body, secret: nil, &c, tally: &tally)
            }
            #expect(tally.notJSON > 30 && tally.notUTF8 > 500 && tally.invalidFields > 300, "\(tally)")
        }
    }

    /// Deep nesting is refused before it is decoded (`JSONDecoder` spends about depth³ on
    /// it; fuzzing found a 64 KiB body nested 511 deep costing ~20 s of CPU): up to
    /// `JSONValue.maximumDepth` levels parse, one more is a malformed body that says why, and
    /// brackets inside strings do not count.
    @Test func nestingDeeperThanTheLimitIsRefusedAsMalformed() {
        func body(_ extra: String) -> [UInt8] {
            Array(#"{"id":"e1","type":"token.rotated","user_id":"u","occurred_at":"2026-01-01T00:00:00Z","echo":{"service_provider":"https://a.example/v","authorization":"OAuth x=\"1\""},"x":"#.utf8)
                + Array(extra.utf8) + [UInt8(ascii: "}")]
        }
        func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth) }
        let limit = JSONValue.maximumDepth
        #expect((try? IncomingEvent.parse(body: body(nested(limit - 1)))) != nil, "the event object is one level")
        #expect((try? IncomingEvent.parse(body: body(#""[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ \" {{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{""#))) != nil)
        for depth in [limit, 200, 511] {
            do throws(EventParseError) {
                _ = try IncomingEvent.parse(body: body(nested(depth)))
                Issue.record("a body nested \(depth + 1) deep was accepted")
            } catch .malformed(let reason) {
                #expect(reason.contains("deeper than \(limit)"), "\(reason)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    // MARK: - OAuth header: round trips

    /// Headers built from random parameter sets — names and values of any Unicode, NUL and
    /// quotes included, percent-encoded with `OAuth1.percentEncode` or (half the time) with
    /// any legal spelling: other escapes, lower-case hex, raw safe characters, any scheme
    /// case, extra white space and empty list elements, realm anywhere — parse back to the
    /// same parameters and realm.
    @Test func oauthHeadersRoundTrip() async {
        await offTheConcurrencyPool {
            Fuzz.check("oauthHeadersRoundTrip", cases: 1500) { rng, c in
                let spec = OAuthSpec.random(&rng)
                let canonical = rng.chance(0.5)
                let header = OAuthText.header(spec, canonical: canonical, &rng)
                c.input = String(reflecting: header)
                do throws(OAuthHeaderError) {
                    let parsed = try OAuthAuthorizationHeader.parse(header)
                    c.check(parsed.parameters == spec.parameters,
                            "parameters \(parsed.parameters.debugDescription) != \(spec.parameters.debugDescription)")
                    c.check(parsed.realm == spec.realm, "realm \(String(reflecting: parsed.realm)) != \(String(reflecting: spec.realm))")
                    for violation in OAuthInvariants.violations(of: parsed, header: header) { c.check(false, violation) }
                } catch {
                    c.check(false, "a \(canonical ? "canonical" : "valid") header was refused: \(error)")
                }
            }
        }
    }

    // MARK: - OAuth header: hostile headers

    /// Inputs the fuzzing below found, fixed in OAuthAuthorizationHeader+Parsing.swift.
    @Test func oauthRegressionsFoundByFuzzing() throws {
        // A percent-encoded spelling of `realm` is the realm: it landed among the parameters,
        // and the header rendered again (`realm="r"`) parsed to another one.
        let encoded = try OAuthAuthorizationHeader.parse(#"OAuth re%61lm="r", oauth_token="t""#)
        #expect(encoded.realm == "r")
        #expect(encoded.parameters == ["oauth_token": "t"])
        #expect(try OAuthAuthorizationHeader.parse(encoded.headerValue) == encoded)
        let twice = try #require(throws: OAuthHeaderError.self) {
            try OAuthAuthorizationHeader.parse(#"OAuth realm="a", %72ealm="b""#)
        }
        #expect(twice.reason.contains("realm appears more than once"))
        // A tab inside the realm: `realm` promises printable ASCII (what `isValidRealm` holds
        // the signing side to), and the parser let it through.
        let tab = try #require(throws: OAuthHeaderError.self) {
            try OAuthAuthorizationHeader.parse("OAuth realm=\"M\t4f&n\", oauth_token=\"S3CR3Tcz\"")
        }
        #expect(tab.reason.contains("realm") && tab.reason.contains("tab"), "\(tab.reason)")
        #expect(!tab.reason.contains("S3CR3T") && !tab.reason.contains("4f&n"))
        // Tabs still separate parameters.
        #expect(try OAuthAuthorizationHeader.parse("OAuth\trealm=\"R\",\toauth_token=\"t\"").realm == "R")
    }

    /// Valid headers with random damage (dropped or added quotes, `=` and commas, repeated
    /// segments, bad percent escapes, backslashes, control and non-ASCII characters,
    /// truncation, random bytes, another scheme) and plain random text: the parser never
    /// crashes; a header it accepts keeps the parser's promises (printable ASCII only, realm
    /// out of the parameters, its re-rendering parses to the same thing), and a refusal says
    /// what is wrong without repeating a credential.
    @Test func mutatedOAuthHeadersParseOrFailCleanly() async {
        await offTheConcurrencyPool {
            var accepted = 0, refused = 0
            Fuzz.check("mutatedOAuthHeadersParseOrFailCleanly", cases: 3000) { rng, c in
                let spec = OAuthSpec.random(&rng)
                let header: String
                if rng.chance(0.15) {
                    let alphabet = Array(#"OAuth oauth_token realm ="",,%%2C%zz\\ \t"#.utf8) + [0, 0x0D, 0x0A, 0x7F, 0xC3, 0xA9]
                    header = String(decoding: (0..<rng.int(0...120)).map { _ in rng.pick(alphabet) }, as: UTF8.self)
                } else {
                    var bytes = Array(OAuthText.header(spec, canonical: rng.chance(0.5), &rng).utf8)
                    for _ in 0..<rng.int(1...3) { Mutate.header(&bytes, &rng) }
                    header = String(decoding: bytes, as: UTF8.self)
                }
                c.input = String(reflecting: header)
                do throws(OAuthHeaderError) {
                    let parsed = try OAuthAuthorizationHeader.parse(header)
                    accepted += 1
                    for violation in OAuthInvariants.violations(of: parsed, header: header) { c.check(false, violation) }
                } catch {
                    refused += 1
                    for violation in OAuthInvariants.violations(of: error, header: header, secret: spec.secret) { c.check(false, violation) }
                }
            }
            #expect(accepted > 75 && refused > 2000, "accepted \(accepted), refused \(refused)")
        }
    }

    /// A parameter given twice — under the same name or another spelling of it (`oauth%5Ftoken`),
    /// or `realm` in another case — is always refused as repeated, whatever the values.
    @Test func aRepeatedOAuthParameterIsAlwaysRefused() {
        Fuzz.check("aRepeatedOAuthParameterIsAlwaysRefused", cases: 1500) { rng, c in
            var spec = OAuthSpec.random(&rng)
            let repeatRealm = spec.parameters.isEmpty || rng.chance(0.2)
            if repeatRealm && spec.realm == nil { spec.realm = OAuthSpec.randomRealm(&rng) }
            var entries = OAuthText.entries(spec, canonical: rng.chance(0.5), &rng)
            let again = repeatRealm
                ? OAuthText.realmEntry(OAuthSpec.randomRealm(&rng), &rng)
                : OAuthText.entry(rng.pick(Array(spec.parameters.keys)), OAuthSpec.randomValue(&rng), canonical: rng.chance(0.5), &rng)
            entries.insert(again, at: rng.int(0...entries.count))
            let header = OAuthText.join(entries, canonical: rng.chance(0.5), &rng)
            c.input = String(reflecting: header)
            do throws(OAuthHeaderError) {
                let parsed = try OAuthAuthorizationHeader.parse(header)
                c.check(false, "a repeated \(repeatRealm ? "realm" : "parameter") was accepted: \(parsed)")
            } catch {
                c.check(error.reason.contains("appears more than once"), "the refusal does not say what is repeated: \(error.reason)")
                c.check(!error.reason.contains(spec.secret), "the refusal repeats a credential: \(error.reason)")
            }
        }
    }

    /// A control character (other than tab) or a non-ASCII character anywhere in an otherwise
    /// valid header is always refused, saying which.
    @Test func controlAndNonASCIICharactersAreAlwaysRefused() {
        let inserts: [Unicode.Scalar] = (0x00...0x1F).compactMap { $0 == 0x09 ? nil : Unicode.Scalar($0) }
            + ["\u{7F}", "\u{80}", "\u{85}", "\u{9F}", "\u{A0}", "é", "€", "\u{2028}", "\u{FEFF}", "\u{FFFD}", "😀"]
        Fuzz.check("controlAndNonASCIICharactersAreAlwaysRefused", cases: 1000) { rng, c in
            let spec = OAuthSpec.random(&rng)
            var scalars = Array(OAuthText.header(spec, canonical: rng.chance(0.5), &rng).unicodeScalars)
            let inserted = rng.pick(inserts)
            scalars.insert(inserted, at: rng.int(0...scalars.count))
            var header = ""
            header.unicodeScalars.append(contentsOf: scalars)
            c.input = String(reflecting: header)
            do throws(OAuthHeaderError) {
                _ = try OAuthAuthorizationHeader.parse(header)
                c.check(false, "a header with U+\(String(inserted.value, radix: 16, uppercase: true)) was accepted")
            } catch {
                let expected = inserted.isASCII ? "control character" : "non-ASCII"
                c.check(error.reason.contains(expected), "the refusal should say \(expected): \(error.reason)")
                c.check(!error.reason.contains(spec.secret), "the refusal repeats a credential: \(error.reason)")
            }
        }
    }
}

// MARK: - The fuzzing harness

/// SplitMix64 (Steele, Lea and Flood, 2014): small, fast and seedable, so that every case
/// can be run again from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &self) < probability }
    mutating func pick<C: Collection>(_ choices: C) -> C.Element { choices.randomElement(using: &self)! }
}

enum Fuzz {
    static let seed: UInt64 = {
        guard let text = ProcessInfo.processInfo.environment["ECHORELAY_FUZZ_SEED"] else { return 0xEC40_7E1A_F022_0007 }
        return text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) ?? 0 : UInt64(text) ?? 0
    }()

    static let scale: Int = max(1, ProcessInfo.processInfo.environment["ECHORELAY_FUZZ_SCALE"].flatMap { Int($0) } ?? 1)

    /// How many failing cases of a property are recorded in full.
    static let shown: Int = ProcessInfo.processInfo.environment["ECHORELAY_FUZZ_SHOW"].flatMap { Int($0) } ?? 3

    /// What one case found wrong, and the input to show with it.
    struct Case {
        var input = ""
        var problems: [String] = []

        mutating func check(_ condition: Bool, _ problem: @autoclosure () -> String) {
            if !condition { problems.append(problem()) }
        }
    }

    /// Runs `cases` cases of a property, each from its own generator (so that one case can be
    /// replayed without the others), and records the first few failing ones as issues.
    static func check(
        _ property: String, cases: Int, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (inout SplitMix64, inout Case) -> Void
    ) {
        var propertyHash: UInt64 = 0xCBF2_9CE4_8422_2325 // FNV-1a: stable across runs, unlike Hasher
        for byte in property.utf8 { propertyHash = (propertyHash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let total = cases * scale
        var failures = 0
        for index in 0..<total {
            var rng = SplitMix64(seed: seed ^ propertyHash ^ (UInt64(index) &* 0xD1B5_4A32_D192_ED03))
            var fuzzCase = Case()
            body(&rng, &fuzzCase)
            guard !fuzzCase.problems.isEmpty else { continue }
            failures += 1
            guard failures <= shown else { continue }
            Issue.record("""
                \(property): case \(index) of \(total) failed (ECHORELAY_FUZZ_SEED=0x\(String(seed, radix: 16)))
                \(fuzzCase.problems.map { "  - " + $0 }.joined(separator: "\n"))
                  input: \(fuzzCase.input)
                """, sourceLocation: sourceLocation)
        }
        if failures > shown {
            Issue.record("\(property): \(failures) of \(total) cases failed in all (the first \(shown) are shown)", sourceLocation: sourceLocation)
        }
    }

    /// Bytes as a Swift literal when they are UTF-8 text, in hex otherwise; cut short if long.
    static func show(_ bytes: [UInt8]) -> String {
        let limit = 1500
        let head = Array(bytes.prefix(limit))
        let more = bytes.count > limit ? " … (\(bytes.count) bytes in all)" : ""
        if let text = String(validating: head, as: UTF8.self) { return String(reflecting: text) + more }
        return "hex " + head.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() + more
    }

    static func show(_ text: String) -> String { show(Array(text.utf8)) }
}

fileprivate extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

// MARK: - JSON, written by hand so that every spelling can be produced

indirect enum JSONTree {
    case null
    case bool(Bool)
    /// Written verbatim: number literals (valid or not), broken strings, deep nesting.
    case raw(String)
    case string(String)
    case array([JSONTree])
    case object([(String, JSONTree)])

    /// A random value that any JSON parser must take: no huge numbers, shallow nesting, but
    /// strings of any scalar (NUL, controls, surrogate-pair scalars, quotes) included.
    static func random(_ rng: inout SplitMix64, depth: Int) -> JSONTree {
        switch rng.int(0...(depth > 0 ? 7 : 4)) {
        case 0: return .null
        case 1: return .bool(rng.chance(0.5))
        case 2: return .raw(rng.pick(["0", "-1", "42", "9223372036854775807", "-9223372036854775808", "1.5", "-0.25", "1e3", "2E-2", "-0"]))
        case 3, 4: return .string(Gen.anyText(&rng, length: 0...12))
        case 5: return .array((0..<rng.int(0...4)).map { _ in random(&rng, depth: depth - 1) })
        default:
            var seen = Set<String>()
            return .object((0..<rng.int(0...4)).compactMap { _ in
                let key = Gen.anyText(&rng, length: 0...6)
                return seen.insert(key).inserted ? (key, random(&rng, depth: depth - 1)) : nil
            })
        }
    }

    /// The same document with every object's keys in a new order.
    func reordered(_ rng: inout SplitMix64) -> JSONTree {
        switch self {
        case .array(let items): return .array(items.map { $0.reordered(&rng) })
        case .object(let pairs): return .object(pairs.map { ($0.0, $0.1.reordered(&rng)) }.shuffled(using: &rng))
        default: return self
        }
    }
}

enum JSONText {
    static func write(_ tree: JSONTree, _ rng: inout SplitMix64) -> String {
        var out = space(&rng)
        write(tree, into: &out, &rng)
        return out + space(&rng)
    }

    private static func write(_ tree: JSONTree, into out: inout String, _ rng: inout SplitMix64) {
        switch tree {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .raw(let text): out += text
        case .string(let text): out += string(text, &rng)
        case .array(let items):
            out += "[" + space(&rng)
            for (index, item) in items.enumerated() {
                if index > 0 { out += space(&rng) + "," + space(&rng) }
                write(item, into: &out, &rng)
            }
            out += space(&rng) + "]"
        case .object(let pairs):
            out += "{" + space(&rng)
            for (index, (key, value)) in pairs.enumerated() {
                if index > 0 { out += space(&rng) + "," + space(&rng) }
                out += string(key, &rng) + space(&rng) + ":" + space(&rng)
                write(value, into: &out, &rng)
            }
            out += space(&rng) + "}"
        }
    }

    private static func space(_ rng: inout SplitMix64) -> String {
        rng.chance(0.7) ? "" : rng.pick([" ", "  ", "\n", "\t", "\r\n", " \n    "])
    }

    static let shortEscapes: [Unicode.Scalar: String] = [
        "\n": "\\n", "\r": "\\r", "\t": "\\t", "\u{8}": "\\b", "\u{C}": "\\f", "/": "\\/",
    ]

    /// A JSON string literal for `text`, each scalar written raw or escaped at random.
    static func string(_ text: String, _ rng: inout SplitMix64) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where shortEscapes[scalar] != nil && rng.chance(0.6): out += shortEscapes[scalar]!
            default:
                if scalar.value < 0x20 || rng.chance(0.1) {
                    out += unicodeEscape(scalar, &rng)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// `\uXXXX`, or a surrogate pair of them, in random hex case.
    static func unicodeEscape(_ scalar: Unicode.Scalar, _ rng: inout SplitMix64) -> String {
        let upper = rng.chance(0.5)
        func escape(_ unit: UInt16) -> String {
            let hex = String(unit, radix: 16, uppercase: upper)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
        return UTF16.encode(scalar)!.map(escape).joined()
    }
}

// MARK: - Random valid field values

enum Gen {
    static let idCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")

    /// Printable scalars that are not white space: ASCII, Latin-1 letters and signs, Greek,
    /// Cyrillic, Arabic and CJK letters, emoji (outside the BMP) and a combining accent.
    static let printableScalarRanges: [ClosedRange<UInt32>] = [
        0x21...0x7E, 0x21...0x7E, 0xC0...0xFF, 0x3B1...0x3C9, 0x430...0x44F, 0x627...0x63A,
        0x4E00...0x9FA5, 0x1F600...0x1F64F, 0x301...0x301,
    ]

    /// Anything at all: printable text, white space, NUL and other controls, format and
    /// private-use characters, line separators.
    static let anyScalarRanges: [ClosedRange<UInt32>] = printableScalarRanges + [
        0x00...0x1F, 0x7F...0x9F, 0x20...0x20, 0xA0...0xA0, 0x200B...0x200F, 0x2028...0x2029, 0xFEFF...0xFEFF,
        0xE000...0xE0FF, 0xFFFD...0xFFFD, 0x10FFFF...0x10FFFF,
    ]

    static func text(from ranges: [ClosedRange<UInt32>], _ rng: inout SplitMix64, length: ClosedRange<Int>) -> String {
        var text = ""
        for _ in 0..<rng.int(length) {
            text.unicodeScalars.append(Unicode.Scalar(UInt32.random(in: rng.pick(ranges), using: &rng))!)
        }
        return text
    }

    static func anyText(_ rng: inout SplitMix64, length: ClosedRange<Int>) -> String {
        text(from: anyScalarRanges, &rng, length: length)
    }

    static func eventID(_ rng: inout SplitMix64) -> String {
        let length = rng.chance(0.2) ? rng.pick([1, 2, 127, 128]) : rng.int(1...40)
        return String((0..<length).map { _ in rng.pick(idCharacters) })
    }

    static func userID(_ rng: inout SplitMix64) -> String {
        let length = rng.chance(0.2) ? rng.pick([1, 63, 64]) : rng.int(1...20)
        return text(from: printableScalarRanges, &rng, length: length...length)
    }

    static func phoneNumber(_ rng: inout SplitMix64) -> String {
        "+" + String(rng.int(1...9)) + String((0..<rng.int(1...14)).map { _ in rng.pick(Array("0123456789")) })
    }

    /// An RFC 6750 bearer token: opaque, JWT-shaped, or base64 with padding.
    static func accessToken(_ rng: inout SplitMix64) -> String {
        let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/")
        // Long enough that finding it in a text means the text repeats it.
        let body = String((0..<rng.int(12...80)).map { _ in rng.pick(characters) })
        return body + String(repeating: "=", count: rng.int(0...2))
    }

    static func serviceProvider(_ rng: inout SplitMix64) -> String {
        let alnum = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        func label(_ rng: inout SplitMix64) -> String { String((0..<rng.int(1...10)).map { _ in rng.pick(alnum) }) }
        let host = rng.chance(0.1)
            ? rng.pick(["127.0.0.1", "[::1]", "localhost"])
            : (0..<rng.int(1...3)).map { _ in label(&rng) }.joined(separator: ".") + "." + rng.pick(["com", "example", "net"])
        let port = rng.chance(0.2) ? ":" + String(rng.int(1...65535)) : ""
        let pathCharacters = Array("abcXYZ019-._~!$&'()*+,;=:@")
        let path = (0..<rng.int(0...4)).map { _ in "/" + String((0..<rng.int(0...8)).map { _ in rng.pick(pathCharacters) }) }.joined()
        let query = rng.chance(0.3) ? "?a=1&b=%C3%A9" : ""
        return rng.pick(["https", "http", "HTTPS"]) + "://" + host + port + path + query
    }
}

/// An RFC 3339 timestamp and the instant it names, worked out here independently of
/// `RFC3339.parse` (days counted from 0001-01-01, not by Hinnant's algorithm).
struct Timestamp {
    var text: String
    var seconds: Double
    var hasFraction: Bool

    /// 0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z, the stored range.
    static let lowest = Double(daysSince1970(year: 1, month: 1, day: 1) * 86_400)
    static let highest = Double(daysSince1970(year: 10_000, month: 1, day: 1) * 86_400)

    var inRange: Bool { seconds >= Self.lowest && seconds < Self.highest }

    func matches(_ date: Date) -> Bool {
        hasFraction ? abs(date.timeIntervalSince1970 - seconds) < 0.000_1 : date.timeIntervalSince1970 == seconds
    }

    static func isLeapYear(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        [31, isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    }

    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        func floorDivision(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }
        let past = year - 1 // year 0 (0000) is valid RFC 3339 text: count it with floored division
        let beforeYear = 365 * past + floorDivision(past, 4) - floorDivision(past, 100) + floorDivision(past, 400)
        let beforeMonth = (1..<month).reduce(0) { $0 + daysInMonth($1, year: year) }
        return beforeYear + beforeMonth + day - 1 - 719_162 // 719 162 days from 0001-01-01 to 1970-01-01
    }

    static func random(_ rng: inout SplitMix64) -> Timestamp {
        // Now and then the first hours of year 1 or the last of year 9999, with an offset that
        // may take the instant out of the stored range.
        let boundary = rng.chance(0.06) ? rng.pick([1, 9999]) : nil
        let year = boundary ?? (rng.chance(0.3) ? rng.pick([1, 2, 1969, 1970, 2000, 9998, 9999]) : rng.int(1...9999))
        let month = boundary.map { $0 == 1 ? 1 : 12 } ?? (rng.chance(0.3) ? rng.pick([1, 2, 12]) : rng.int(1...12))
        let lastDay = daysInMonth(month, year: year)
        let day = boundary.map { $0 == 1 ? 1 : 31 } ?? (rng.chance(0.3) ? rng.pick([1, lastDay]) : rng.int(1...lastDay))
        let edge = rng.chance(0.3)
        let hour = boundary.map { $0 == 1 ? rng.int(0...2) : rng.int(21...23) } ?? (edge ? rng.pick([0, 23]) : rng.int(0...23))
        let minute = edge ? rng.pick([0, 59]) : rng.int(0...59)
        let second = rng.chance(0.05) ? 60 : edge ? rng.pick([0, 59]) : rng.int(0...59) // 60: a leap second
        let fraction = rng.chance(0.5) ? "" : String((0..<rng.int(1...9)).map { _ in rng.pick(Array("0123456789")) })
        var offset = 0
        var zone = rng.pick(["Z", "z"])
        if boundary != nil || rng.chance(0.5) {
            let hours = rng.chance(0.3) ? rng.pick([0, 23]) : rng.int(0...23)
            let minutes = rng.chance(0.3) ? rng.pick([0, 59]) : rng.int(0...59)
            let sign = rng.chance(0.5) ? 1 : -1
            offset = sign * (hours * 3600 + minutes * 60)
            zone = (sign < 0 ? "-" : "+") + pad(hours, 2) + ":" + pad(minutes, 2)
        }
        let text = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + rng.pick(["T", "t"])
            + pad(hour, 2) + ":" + pad(minute, 2) + ":" + pad(second, 2) + (fraction.isEmpty ? "" : "." + fraction) + zone
        let whole = daysSince1970(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Timestamp(text: text, seconds: Double(whole) + (fraction.isEmpty ? 0 : Double("0." + fraction)!),
                         hasFraction: !fraction.isEmpty)
    }

    static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

/// A random valid event, and the JSON document that carries it.
struct EventSpec {
    var id: String
    var type: EventType
    var userID: String
    var occurredAt: Timestamp
    var phoneNumber: String?
    var dataForm: Int
    var serviceProvider: String
    var authorization: String
    /// When set, the event carries `oauth2` with this access token instead of `echo`.
    var accessToken: String?
    /// A credential inside `authorization`, or the access token, which no error text may repeat.
    var secret: String
    var extras: [(String, JSONTree)]
    var dataExtras: [(String, JSONTree)]
    var echoExtras: [(String, JSONTree)]

    static func random(_ rng: inout SplitMix64) -> EventSpec {
        let type = rng.pick(EventType.allCases)
        // 0: no data, 1: data null, 2: data {} (with extras), 3: data with a phone number.
        let dataForm = type == .phoneChanged ? 3 : rng.int(0...3)
        let oauth = OAuthSpec.random(&rng, withCredentials: true)
        var authorization = OAuthText.header(oauth, canonical: true, &rng)
        if rng.chance(0.1) { authorization += " " + Gen.text(from: Gen.printableScalarRanges, &rng, length: 1...5) }
        func extraFields(_ rng: inout SplitMix64, _ count: ClosedRange<Int>) -> [(String, JSONTree)] {
            var seen = Set<String>()
            return (0..<rng.int(count)).compactMap { _ in
                let key = "x-" + Gen.anyText(&rng, length: 0...8)
                return seen.insert(key).inserted ? (key, JSONTree.random(&rng, depth: 3)) : nil
            }
        }
        let accessToken = rng.chance(0.25) ? Gen.accessToken(&rng) : nil
        return EventSpec(
            id: Gen.eventID(&rng), type: type, userID: Gen.userID(&rng), occurredAt: Timestamp.random(&rng),
            phoneNumber: dataForm == 3 ? Gen.phoneNumber(&rng) : nil, dataForm: dataForm,
            serviceProvider: Gen.serviceProvider(&rng), authorization: authorization, accessToken: accessToken,
            secret: accessToken ?? oauth.secret,
            extras: extraFields(&rng, 0...3), dataExtras: extraFields(&rng, 0...2), echoExtras: extraFields(&rng, 0...1)
        )
    }

    /// The fields of `FieldOracle` this event has: the phone number only if it has one, and the
    /// fields of its one proof.
    var fields: [String] {
        FieldOracle.fields.filter { field in
            switch field {
            case "data.phone_number": phoneNumber != nil
            case "oauth2.access_token": accessToken != nil
            case "echo.service_provider", "echo.authorization": accessToken == nil
            default: true
            }
        }
    }

    /// The event as a JSON object, keys in random order; `field` (a dotted path), if given,
    /// holds `value` instead.
    func tree(_ rng: inout SplitMix64, replacing field: String? = nil, with value: JSONTree = .null) -> JSONTree {
        var pairs: [(String, JSONTree)] = [
            ("id", .string(id)), ("type", .string(type.rawValue)), ("user_id", .string(userID)),
            ("occurred_at", .string(occurredAt.text)),
            accessToken.map { ("oauth2", .object([("access_token", .string($0))] + echoExtras)) }
                ?? ("echo", .object([("service_provider", .string(serviceProvider)), ("authorization", .string(authorization))] + echoExtras)),
        ] + extras
        switch dataForm {
        case 1: pairs.append(("data", .null))
        case 2: pairs.append(("data", .object(dataExtras)))
        case 3: pairs.append(("data", .object([("phone_number", .string(phoneNumber!))] + dataExtras)))
        default: break
        }
        if let field {
            let path = field.split(separator: ".").map(String.init)
            let index = pairs.firstIndex { $0.0 == path[0] }!
            if path.count == 1 {
                pairs[index].1 = value
            } else if case .object(var inner) = pairs[index].1 {
                inner[inner.firstIndex { $0.0 == path[1] }!].1 = value
                pairs[index].1 = .object(inner)
            }
        }
        return JSONTree.object(pairs).reordered(&rng)
    }
}

/// Each field's rule as IncomingEvent+Parsing.swift and docs/identity-provider.md state it, written out
/// again here (without the validator's own rule functions) to judge single-field changes.
enum FieldOracle {
    static let fields = ["id", "type", "user_id", "occurred_at", "data.phone_number", "echo.service_provider", "echo.authorization",
                         "oauth2.access_token"]

    static func isValid(_ field: String, _ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        let hasControl = scalars.contains { $0.properties.generalCategory == .control }
        switch field {
        case "id":
            return (1...128).contains(text.utf8.count) && text.utf8.allSatisfy { Gen.idCharacters.contains(Character(Unicode.Scalar($0))) }
        case "type":
            return ["token.rotated", "phone.changed", "account.deactivated"].contains(text) // docs/identity-provider.md
        case "user_id":
            let unprintable: Set<Unicode.GeneralCategory> = [.control, .format, .surrogate, .privateUse, .unassigned,
                                                             .lineSeparator, .paragraphSeparator, .spaceSeparator]
            return (1...64).contains(scalars.count)
                && !scalars.contains { $0.properties.isWhitespace || unprintable.contains($0.properties.generalCategory) }
        case "occurred_at":
            return RFC3339Oracle.instant(text).map { $0 >= Timestamp.lowest && $0 < Timestamp.highest } ?? false
        case "data.phone_number":
            let digits = Array(text.utf8.dropFirst())
            return text.hasPrefix("+") && (2...15).contains(digits.count) && digits.first != UInt8(ascii: "0")
                && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        case "echo.service_provider":
            let components = URLComponents(string: text)
            return !hasControl && components?.scheme?.isEmpty == false && components?.host?.isEmpty == false
        case "oauth2.access_token": // RFC 6750's b64token, 1 to 4096 characters
            let token = Array(text.unicodeScalars)
            let body = token.prefix { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-._~+/".unicodeScalars.contains($0)) }
            return (1...4096).contains(token.count) && !body.isEmpty && token.dropFirst(body.count).allSatisfy { $0 == "=" }
        default: // echo.authorization
            return text.hasPrefix("OAuth ") && !hasControl
        }
    }

    static func value(of field: String, in event: IncomingEvent) -> String? {
        switch field {
        case "id": event.id
        case "type": event.type.rawValue
        case "user_id": event.userID
        case "occurred_at": nil // an instant: compared with RFC3339Oracle instead
        case "data.phone_number": event.phoneNumber
        case "echo.service_provider": event.echo?.serviceProvider
        case "oauth2.access_token": event.oauth2?.accessToken.revealed
        default: event.echo?.authorization.revealed
        }
    }

    static func validValue(of field: String, _ rng: inout SplitMix64) -> String {
        switch field {
        case "id": Gen.eventID(&rng)
        case "type": rng.pick(EventType.allCases).rawValue
        case "user_id": Gen.userID(&rng)
        case "occurred_at": Timestamp.random(&rng).text
        case "data.phone_number": Gen.phoneNumber(&rng)
        case "echo.service_provider": Gen.serviceProvider(&rng)
        case "oauth2.access_token": Gen.accessToken(&rng)
        default: OAuthText.header(OAuthSpec.random(&rng, withCredentials: true), canonical: rng.chance(0.5), &rng)
        }
    }

    static let oddScalars: [Unicode.Scalar] = [
        "\u{0}", "\u{1}", "\n", "\t", "\u{7F}", "\u{85}", "\u{9F}", " ", "\u{A0}", "\u{200B}", "\u{200E}", "\u{2028}", "\u{2029}",
        "\u{E000}", "\u{378}", "\u{FEFF}", "é", "٣", "0", "+", "-", "x", ".", ":", "/",
    ]

    /// Values just inside and just outside each field's documented limits.
    static func nearMiss(of field: String, _ rng: inout SplitMix64) -> String {
        func digits(_ count: Int, _ rng: inout SplitMix64) -> String { String((0..<count).map { _ in rng.pick(Array("0123456789")) }) }
        switch field {
        case "id": return String((0..<rng.pick([127, 128, 129])).map { _ in rng.pick(Gen.idCharacters) })
        case "type": return rng.pick(["Token.Rotated", "token.rotated ", " phone.changed", "account_deactivated", "token", "phone.changed."])
        case "user_id":
            let length = rng.pick([63, 64, 65, 66])
            return Gen.text(from: Gen.printableScalarRanges, &rng, length: length...length)
        case "occurred_at": return Mutate.damagedTimestamp(&rng)
        case "data.phone_number":
            return rng.pick(["+0" + digits(rng.int(1...14), &rng), "+" + String(rng.int(1...9)) + digits(rng.pick([0, 1, 13, 14, 15]), &rng),
                             String(rng.int(1...9)) + digits(10, &rng), "00" + digits(10, &rng), "+" + String(rng.int(1...9)) + digits(3, &rng) + "x"])
        case "oauth2.access_token":
            let token = Gen.accessToken(&rng)
            return rng.pick(["", "=", "==abc", token + "=x", token + " ", "Bearer " + token, token + "\n", token + "é", token + "%20",
                             String(repeating: "a", count: rng.pick([4095, 4096, 4097]))])
        case "echo.service_provider":
            return rng.pick(["https:///1.1/account.json", "https://", "//api.example.com/x", "api.example.com/x", "https:api.example.com",
                             "mailto:someone@example.com", "https://user@api.example.com/x", "HTTPS://API.EXAMPLE.COM"])
        default:
            return rng.pick(["oauth x=\"1\"", "OAuth", "OAuth\tx=\"1\"", " OAuth x=\"1\"", "OAuth ", "OAuth \u{85}", "OAuth\u{A0}x", "OAuthx"])
        }
    }

    static func hostileString(for field: String, _ rng: inout SplitMix64) -> String {
        if rng.chance(0.3) { return nearMiss(of: field, &rng) }
        if rng.chance(0.5) { // a valid value of this field, edited a little
            var scalars = Array(validValue(of: field, &rng).unicodeScalars)
            for _ in 0..<rng.int(1...2) {
                let at = rng.int(0...scalars.count)
                switch rng.int(0...3) {
                case 0: scalars.insert(rng.pick(oddScalars), at: at)
                case 1: if at < scalars.count { scalars[at] = rng.pick(oddScalars) }
                case 2: if at < scalars.count { scalars.remove(at: at) }
                default: scalars += scalars
                }
            }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            return text
        }
        switch rng.int(0...6) {
        case 0: return rng.pick(Mutate.hostileStrings)
        case 1: return Mutate.damagedTimestamp(&rng)
        case 2: // a valid value of some field, this one or another
            return rng.pick([Gen.eventID(&rng), Gen.userID(&rng), Gen.phoneNumber(&rng), Gen.serviceProvider(&rng),
                             Timestamp.random(&rng).text, rng.pick(EventType.allCases).rawValue, #"OAuth oauth_token="t""#])
        case 3: // one of those with an odd character in it
            var scalars = Array(rng.pick([Gen.eventID(&rng), Gen.userID(&rng), Gen.phoneNumber(&rng), Gen.serviceProvider(&rng),
                                          Timestamp.random(&rng).text, #"OAuth oauth_token="t""#]).unicodeScalars)
            scalars.insert(rng.pick(oddScalars), at: rng.int(0...scalars.count))
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            return text
        case 4: // lengths around the limits
            return String(repeating: rng.pick(["a", "é", "😀", "1", "-"]), count: rng.pick([0, 1, 63, 64, 65, 127, 128, 129, 1000]))
        default: return Gen.anyText(&rng, length: 0...10)
        }
    }
}

/// RFC 3339 §5.6 `date-time` read again independently of `RFC3339.parse`: the instant it names
/// (leap second 60 counted as the next minute's start), or nil when the text is not one.
fileprivate enum RFC3339Oracle {
    static func instant(_ text: String) -> Double? {
        let b = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= b.count, b[range].allSatisfy({ (48...57).contains($0) }) else { return nil }
            return b[range].reduce(0) { $0 * 10 + Int($1 - 48) }
        }
        func byte(_ index: Int, _ allowed: String) -> Bool { index < b.count && allowed.utf8.contains(b[index]) }
        guard let year = number(0..<4), byte(4, "-"), let month = number(5..<7), byte(7, "-"), let day = number(8..<10),
              byte(10, "Tt"), let hour = number(11..<13), byte(13, ":"), let minute = number(14..<16), byte(16, ":"),
              let second = number(17..<19)
        else { return nil }
        var index = 19
        var fraction = 0.0
        if byte(index, ".") {
            let start = index + 1
            index = start
            while byte(index, "0123456789") { index += 1 }
            guard index > start else { return nil }
            fraction = Double("0." + String(decoding: b[start..<index], as: UTF8.self))!
        }
        var offset = 0
        if byte(index, "Zz") {
            index += 1
        } else if byte(index, "+-") {
            guard let hours = number(index + 1..<index + 3), byte(index + 3, ":"), let minutes = number(index + 4..<index + 6),
                  hours <= 23, minutes <= 59 else { return nil }
            offset = (b[index] == UInt8(ascii: "-") ? -1 : 1) * (hours * 3600 + minutes * 60)
            index += 6
        } else {
            return nil
        }
        guard index == b.count, (1...12).contains(month), (1...Timestamp.daysInMonth(month, year: year)).contains(day),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        let whole = Timestamp.daysSince1970(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Double(whole) + fraction
    }
}

// MARK: - Mutations

enum Mutate {
    /// A valid body of `spec` after one to three structural changes and, a third of the time,
    /// byte-level damage as well.
    static func eventBody(_ spec: EventSpec, _ rng: inout SplitMix64) -> [UInt8] {
        var tree = spec.tree(&rng)
        for _ in 0..<rng.int(1...3) { event(&tree, &rng) }
        var body = Array(JSONText.write(tree, &rng).utf8)
        if rng.chance(0.35) {
            for _ in 0..<rng.int(1...3) { bytes(&body, &rng) }
        }
        return body
    }

    /// One structural change to an event document: a key deleted, duplicated, renamed or
    /// given a hostile value, in the top object or in `echo` or `data`; or another root.
    static func event(_ tree: inout JSONTree, _ rng: inout SplitMix64) {
        guard case .object(var pairs) = tree, rng.chance(0.97) else {
            tree = rng.pick([JSONTree.null, .bool(true), .raw("1"), .string("{}"), .array([tree]), .raw("[]"), .raw("\"\\ud800\"")])
            return
        }
        let nested = pairs.indices.filter { if case .object = pairs[$0].1 { true } else { false } }
        if !nested.isEmpty, rng.chance(0.4) {
            let index = rng.pick(nested)
            guard case .object(var inner) = pairs[index].1 else { return }
            object(&inner, &rng)
            pairs[index].1 = .object(inner)
        } else {
            object(&pairs, &rng)
        }
        tree = .object(pairs)
    }

    static func object(_ pairs: inout [(String, JSONTree)], _ rng: inout SplitMix64) {
        let knownKeys = Ingest.knownFields.map { String($0.split(separator: ".").last!) }
        guard !pairs.isEmpty else {
            pairs.append((rng.pick(knownKeys), hostileValue(&rng)))
            return
        }
        let index = rng.int(0...pairs.count - 1)
        switch rng.int(0...5) {
        case 0: pairs.remove(at: index)
        case 1: // the same key again, with its own value or a hostile one
            pairs.insert((pairs[index].0, rng.chance(0.5) ? pairs[index].1 : hostileValue(&rng)), at: rng.int(0...pairs.count))
        case 2: // a near miss of the key
            let key = pairs[index].0
            pairs[index].0 = rng.pick([key.uppercased(), key + " ", " " + key, key + "\u{0}", key.replacingOccurrences(of: "_", with: "-"), ""])
        case 3: pairs.append((rng.pick(knownKeys), hostileValue(&rng)))
        default: pairs[index].1 = hostileValue(&rng)
        }
    }

    static let hostileStrings: [String] = [
        "", " ", "\u{0}", "a\u{0}b", "\u{7F}", "\u{85}", "\u{2028}", "\u{200B}", "\u{FEFF}", "\u{E000}", "\u{378}",
        "\u{10FFFF}", "\t", "\r\n", "é", "😀", "OAuth", "OAuth ", "oauth x=\"y\"", "OAuth\tx=\"y\"", "Bearer abc",
        "OAuth x=\"\u{0}\"", "https://", "https://exa mple.com/", "/1.1/account.json", "javascript:alert(1)",
        "http://[::1", "https://a.example/\u{1B}[31m", "+", "+0", "+1", "+1234567890123456", "++15555550100",
        "+1555555010\u{0}", "token.rotated ", "TOKEN.ROTATED", "phone.changed\u{0}", "account.deactivated\n",
    ]

    static func hostileValue(_ rng: inout SplitMix64) -> JSONTree {
        switch rng.int(0...9) {
        case 0: return rng.pick([.null, .bool(false), .raw("0"), .array([]), .object([]), .array([.string("x")])])
        case 1: return .string(rng.pick(hostileStrings))
        case 2: // numbers no Int64 or Double holds, and literals JSON does not allow
            return .raw(rng.pick(["1e400", "-1e400", "1e-400", "123456789012345678901234567890", "9223372036854775808",
                                  "-9223372036854775809", "0.1e99999", "00", "01", "1.", ".5", "+1", "NaN", "Infinity",
                                  "-", "0x10", "1e", "--1", "\"\\u0000\""]))
        case 3: // deep nesting: either side of JSONValue.maximumDepth, and far past it
            let depth = rng.pick([8, 30, 31, 32, 64, 200, 511, 512, 513, 2000, 20_000])
            let (open, close) = rng.chance(0.5) ? ("[", "]") : ("{\"a\":", "}")
            return .raw(String(repeating: open, count: depth) + "1" + String(repeating: close, count: rng.chance(0.9) ? depth : depth / 2))
        case 4: // overlong strings
            return .string(String(repeating: rng.pick(["a", "1", "é", " ", "😀", "\u{0}"]), count: rng.pick([65, 129, 1000, 20_000])))
        case 5: // lone and misordered surrogates, bad escapes
            return .raw(rng.pick(["\"\\ud800\"", "\"\\udc00\"", "\"\\udc00\\ud800\"", "\"a\\ud83d\"", "\"\\u12\"", "\"\\x41\"",
                                  "\"\\uZZZZ\"", "\"\\U0041\"", "\"\\\"", "\"\\ud800\\u0041\""]))
        case 6: return .string(damagedTimestamp(&rng))
        case 7: return JSONTree.random(&rng, depth: 4)
        case 8: // a valid value of another field
            return .string(rng.pick([Gen.eventID(&rng), Gen.userID(&rng), Gen.phoneNumber(&rng), Gen.serviceProvider(&rng),
                                     Timestamp.random(&rng).text, rng.pick(EventType.allCases).rawValue]))
        default: // a valid value with a control, NUL, space or format character in it
            var text = Array(rng.pick([Gen.eventID(&rng), Gen.userID(&rng), Gen.phoneNumber(&rng), Gen.serviceProvider(&rng),
                                       #"OAuth oauth_token="t""#]).unicodeScalars)
            text.insert(rng.pick(["\u{0}", "\u{1}", "\n", "\u{7F}", "\u{9F}", " ", "\u{A0}", "\u{200E}", "\u{2029}"]), at: rng.int(0...text.count))
            var string = ""
            string.unicodeScalars.append(contentsOf: text)
            return .string(string)
        }
    }

    static func damagedTimestamp(_ rng: inout SplitMix64) -> String {
        var text = Array(Timestamp.random(&rng).text)
        switch rng.int(0...4) {
        case 0: text.remove(at: rng.int(0...text.count - 1))
        case 1: text[rng.int(0...text.count - 1)] = rng.pick(Array("09:-+TZ. x\u{0}٣"))
        case 2: text = Array(rng.pick(["0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "2026-02-29T00:00:00Z",
                                      "2026-04-31T00:00:00Z", "2026-00-10T00:00:00Z", "2026-01-01T24:00:00Z",
                                      "2026-01-01T00:00:61Z", "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+01:60",
                                      "2026-01-01T00:00:00.Z", "2026-01-01 00:00:00Z", "2026-01-01T00:00:00",
                                      "0001-01-01T00:00:00+00:01", "9999-12-31T23:59:60Z", "+2026-01-01T00:00:00Z"]))
        case 3: text = Array(String(text.prefix(rng.int(0...text.count))))
        default: text.append(contentsOf: rng.pick([" ", "Z", "0", "\n"]))
        }
        return String(text)
    }

    /// One byte-level change: a bit flipped, the body cut short, a range deleted or repeated,
    /// or NUL, control, quote or invalid UTF-8 bytes inserted.
    static func bytes(_ bytes: inout [UInt8], _ rng: inout SplitMix64) {
        guard !bytes.isEmpty else { bytes = [rng.pick([0x7B, 0x00, 0xFF])]; return }
        let at = rng.int(0...bytes.count - 1)
        switch rng.int(0...6) {
        case 0: bytes[at] ^= 1 << UInt8(rng.int(0...7))
        case 1: bytes.removeSubrange(rng.int(0...bytes.count - 1)...)
        case 2: bytes.removeSubrange(at..<min(bytes.count, at + rng.int(1...16)))
        case 3: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + rng.int(1...16))], at: rng.int(0...bytes.count))
        case 4: bytes.insert(contentsOf: rng.pick([[0x00], [0x01], [0x0A], [0x1B], [0x7F], [0x22], [0x5C], [0x2C]] as [[UInt8]]), at: at)
        default: // invalid UTF-8: stray continuation, truncated sequence, overlong, surrogate, above U+10FFFF, FE/FF
            bytes.insert(contentsOf: rng.pick([[0x80], [0xBF], [0xC3], [0xE2, 0x82], [0xC0, 0x80], [0xE0, 0x80, 0x80],
                                               [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFE], [0xFF]] as [[UInt8]]), at: at)
        }
    }

    /// One change to a header's bytes.
    static func header(_ bytes: inout [UInt8], _ rng: inout SplitMix64) {
        func positions(of byte: Character) -> [Int] { bytes.indices.filter { bytes[$0] == byte.asciiValue! } }
        let at = rng.int(0...bytes.count)
        switch rng.int(0...12) {
        case 0: if let quote = positions(of: "\"").randomElement(using: &rng) { bytes.remove(at: quote) }
        case 1: bytes.insert(UInt8(ascii: "\""), at: at)
        case 2: if let equals = positions(of: "=").randomElement(using: &rng) { bytes.remove(at: equals) }
        case 3: // a segment repeated somewhere: often a whole parameter
            let commas = [0] + positions(of: ",") + [bytes.count]
            let start = rng.pick(commas), end = rng.pick(commas)
            if start < end { bytes.insert(contentsOf: bytes[start..<end], at: rng.pick(commas)) }
        case 4: bytes.insert(contentsOf: Array(rng.pick(["%", "%4", "%G1", "%zz", "%C3", "%FF", "%ED%A0%80", "%C0%80", "%F4%90%80%80", "%%"]).utf8), at: at)
        case 5: bytes.insert(UInt8(ascii: "\\"), at: at)
        case 6: bytes.insert(contentsOf: rng.pick([[0x00], [0x0D, 0x0A], [0x0A], [0x7F], [0x1B], [0xC2, 0x85], [0xC3, 0xA9], [0xF0, 0x9F, 0x98, 0x80]] as [[UInt8]]), at: at)
        case 7: bytes.removeSubrange(rng.int(0...bytes.count)...)
        case 8: bytes.removeSubrange(min(at, bytes.count)..<min(bytes.count, at + rng.int(1...12)))
        case 9: // separators, and names with a meaning, among them percent-encoded spellings of realm
            bytes.insert(contentsOf: Array(rng.pick([",", " ", "\t", "=", ";", ",,", "=\"\"", "a", "oauth_token", "realm=\"r\",",
                                                     "REALM=\"r\", ", "re%61lm=\"r\",", ", %72ealm=\"r\"", "oauth%5Ftoken=\"t\","]).utf8), at: at)
        case 10: if !bytes.isEmpty { bytes[rng.int(0...bytes.count - 1)] = UInt8.random(in: 0...255, using: &rng) }
        case 11: // another scheme
            let space = bytes.firstIndex(of: UInt8(ascii: " ")) ?? bytes.count
            bytes.replaceSubrange(0..<space, with: Array(rng.pick(["Bearer", "OAuth2", "OAut", "", "OAuth,", "\"OAuth\"", "OAuth=\"x\""]).utf8))
        default: // a value left unquoted
            if let quote = positions(of: "\"").randomElement(using: &rng),
               let close = bytes[(quote + 1)...].firstIndex(of: UInt8(ascii: "\"")) {
                bytes.remove(at: close)
                bytes.remove(at: quote)
            }
        }
    }
}

// MARK: - Ingest: what every outcome must look like

fileprivate struct OutcomeTally: CustomStringConvertible {
    var accepted = 0, invalidFields = 0, notUTF8 = 0, notJSON = 0, notObject = 0

    var description: String {
        "accepted \(accepted), invalid fields \(invalidFields), not UTF-8 \(notUTF8), not JSON \(notJSON), not an object \(notObject)"
    }
}

fileprivate enum Ingest {
    /// Every field the validator reads, by the dotted path its problems name.
    static let knownFields: Set<String> = [
        "id", "type", "user_id", "occurred_at", "data", "data.phone_number", "echo", "echo.service_provider",
        "echo.authorization", "oauth2", "oauth2.access_token",
    ]

    static func checkOutcome(_ body: [UInt8], secret: String?, _ c: inout Fuzz.Case, tally: inout OutcomeTally) {
        c.input = Fuzz.show(body)
        let isUTF8 = UTF8Check.isValid(body)
        let result = Result { () throws(EventParseError) in try IncomingEvent.parse(body: body) }
        switch result {
        case .success(let event):
            tally.accepted += 1
            c.check(isUTF8, "a body that is not UTF-8 was accepted")
            for violation in Invariants.violations(of: event, secret: secret) { c.check(false, violation) }
        case .failure(.malformed(let reason)):
            c.check(!reason.isEmpty && reason.contains("body"), "a malformed-body reason must name the body: \(String(reflecting: reason))")
            c.check(reason.contains("UTF-8") == !isUTF8,
                    isUTF8 ? "a UTF-8 body was called not UTF-8: \(reason)" : "a body that is not UTF-8 was refused as: \(reason)")
            if let secret { c.check(!reason.contains(secret), "the reason repeats the OAuth credential: \(reason)") }
            if reason.contains("UTF-8") { tally.notUTF8 += 1 } else if reason.contains("JSON object") { tally.notObject += 1 } else { tally.notJSON += 1 }
        case .failure(.invalidFields(let problems)):
            tally.invalidFields += 1
            c.check(isUTF8, "a body that is not UTF-8 got field problems: \(problems)")
            c.check(!problems.isEmpty, "refused with an empty list of field problems")
            c.check(Set(problems.map(\.field)).count == problems.count, "a field is named twice: \(problems)")
            for problem in problems {
                c.check(knownFields.contains(problem.field), "a problem names an unknown field: \(problem)")
                c.check(!problem.reason.isEmpty, "a problem has no reason: \(problem)")
                c.check(problem.description == problem.field + ": " + problem.reason, "a problem's text does not name its field: \(problem)")
                if let secret {
                    c.check(!problem.description.contains(secret), "a problem repeats the OAuth credential: \(problem)")
                }
            }
        }
    }
}

/// The promises an accepted event keeps (IncomingEvent+Parsing.swift, TextRules.swift,
/// docs/identity-provider.md, the ingest contract), checked here without calling the validator's own rule functions.
fileprivate enum Invariants {
    static func violations(of event: IncomingEvent, secret: String?) -> [String] {
        var found: [String] = []
        func expect(_ condition: Bool, _ message: @autoclosure () -> String) { if !condition { found.append(message()) } }
        let idBytes = Array(event.id.utf8)
        expect((1...128).contains(idBytes.count), "accepted id of \(idBytes.count) bytes: \(String(reflecting: event.id))")
        expect(idBytes.allSatisfy { Gen.idCharacters.contains(Character(Unicode.Scalar($0))) },
               "accepted id with a character outside [A-Za-z0-9._:-]: \(String(reflecting: event.id))")

        let scalars = Array(event.userID.unicodeScalars)
        expect((1...64).contains(scalars.count), "accepted user_id of \(scalars.count) characters: \(String(reflecting: event.userID))")
        let unprintable: Set<Unicode.GeneralCategory> = [.control, .format, .surrogate, .privateUse, .unassigned,
                                                         .lineSeparator, .paragraphSeparator, .spaceSeparator]
        expect(!scalars.contains { $0.properties.isWhitespace || unprintable.contains($0.properties.generalCategory) },
               "accepted user_id with white space or an unprintable character: \(String(reflecting: event.userID))")

        let seconds = event.occurredAt.timeIntervalSince1970
        expect(seconds >= Timestamp.lowest && seconds < Timestamp.highest, "accepted occurred_at outside years 1-9999: \(seconds)")

        if let phone = event.phoneNumber {
            let digits = Array(phone.utf8.dropFirst())
            expect(phone.hasPrefix("+") && (2...15).contains(digits.count) && digits.first != UInt8(ascii: "0")
                   && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) },
                   "accepted a phone number that is not E.164: \(String(reflecting: phone))")
        }
        expect(event.type != .phoneChanged || event.phoneNumber != nil, "accepted phone.changed without a phone number")

        expect((event.echo == nil) != (event.oauth2 == nil), "accepted an event without exactly one of echo and oauth2")
        let token = event.oauth2?.accessToken.revealed ?? ""
        expect(event.oauth2 == nil || FieldOracle.isValid("oauth2.access_token", token), "accepted an access token that is not a b64token")
        let authorization = event.echo?.authorization.revealed ?? "OAuth "
        expect(authorization.hasPrefix("OAuth "), "accepted an authorization that is not an OAuth header")
        expect(!authorization.unicodeScalars.contains { $0.properties.generalCategory == .control },
               "accepted an authorization with a control character")
        let url = event.echo?.serviceProvider ?? "https://oauth2.invalid"
        expect(!url.unicodeScalars.contains { $0.properties.generalCategory == .control },
               "accepted a service_provider with a control character: \(String(reflecting: url))")
        let components = URLComponents(string: url)
        expect(components?.scheme?.isEmpty == false && components?.host?.isEmpty == false,
               "accepted a service_provider that is not an absolute URL: \(String(reflecting: url))")

        // Nothing stored may hold U+0000 (TextRules.nulReason): the stores refuse or cut it.
        for (name, text) in [("id", event.id), ("user_id", event.userID), ("phone", event.phoneNumber ?? ""),
                             ("service_provider", url), ("authorization", authorization), ("access_token", token)] {
            expect(!text.utf8.contains(0), "accepted a NUL in \(name)")
        }
        expect(event.fingerprint.count == 32, "a fingerprint of \(event.fingerprint.count) bytes, not a SHA-256")
        if let secret {
            for text in [String(describing: event), String(reflecting: event)] {
                expect(!text.contains(secret), "the event's description shows the OAuth credential")
            }
        }
        return found
    }
}

/// UTF-8 validation written out (Unicode §3.9, table 3-7), to check the validator's own.
fileprivate enum UTF8Check {
    static func isValid(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            let (count, secondRange): (Int, ClosedRange<UInt8>) = switch lead {
            case 0x00...0x7F: (1, 0x80...0xBF)
            case 0xC2...0xDF: (2, 0x80...0xBF)
            case 0xE0: (3, 0xA0...0xBF)
            case 0xE1...0xEC, 0xEE...0xEF: (3, 0x80...0xBF)
            case 0xED: (3, 0x80...0x9F)
            case 0xF0: (4, 0x90...0xBF)
            case 0xF1...0xF3: (4, 0x80...0xBF)
            case 0xF4: (4, 0x80...0x8F)
            default: (0, 0...0)
            }
            guard count > 0, index + count <= bytes.count else { return false }
            if count > 1 {
                guard secondRange.contains(bytes[index + 1]) else { return false }
                for offset in 2..<max(2, count) where !(0x80...0xBF).contains(bytes[index + offset]) { return false }
            }
            index += count
        }
        return true
    }
}

// MARK: - OAuth headers

/// A random OAuth parameter set (names and values of any text), an optional realm, and a
/// credential to look for in error texts.
fileprivate struct OAuthSpec {
    var parameters: [String: String]
    var realm: String?
    var secret: String

    static let commonNames = [
        "oauth_consumer_key", "oauth_token", "oauth_signature_method", "oauth_signature", "oauth_timestamp",
        "oauth_nonce", "oauth_version", "oauth_callback", "oauth_verifier", "oauth_body_hash", "x", "a b", "ü", "😀",
        "name=with=equals", "comma,name", "quote\"name", "back\\slash", "per%cent", "+plus", "REALMS", "realm_",
    ]

    static func random(_ rng: inout SplitMix64, withCredentials: Bool = false) -> OAuthSpec {
        let alnum = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        let secret = "S3CR3T" + String((0..<12).map { _ in rng.pick(alnum) })
        var parameters: [String: String] = [:]
        for _ in 0..<rng.int(0...6) {
            let name = rng.chance(0.6) ? rng.pick(commonNames) : Gen.anyText(&rng, length: 1...10)
            if name.lowercased() != "realm" { parameters[name] = randomValue(&rng) }
        }
        if withCredentials || rng.chance(0.7) {
            parameters["oauth_consumer_key"] = String((0..<rng.int(1...20)).map { _ in rng.pick(alnum) })
            parameters["oauth_token"] = rng.pick(["", "12345-"]) + secret
            parameters["oauth_signature"] = secret + rng.pick(["=", "/+=", "%", ""])
        }
        var realm = rng.chance(0.4) ? randomRealm(&rng) : nil
        if parameters.isEmpty && realm == nil { realm = randomRealm(&rng) }
        return OAuthSpec(parameters: parameters, realm: realm, secret: secret)
    }

    static func randomValue(_ rng: inout SplitMix64) -> String {
        rng.chance(0.2) ? "" : Gen.anyText(&rng, length: 0...30)
    }

    /// Printable ASCII without `"` or `\`: what a realm may hold, as written.
    static func randomRealm(_ rng: inout SplitMix64) -> String {
        let characters = (0x20...0x7E).filter { $0 != 0x22 && $0 != 0x5C }.map { Character(Unicode.Scalar(UInt8($0))) }
        return String((0..<rng.int(0...20)).map { _ in rng.pick(characters) })
    }
}

fileprivate enum OAuthText {
    /// Token characters other than the unreserved ones, and not `%` (RFC 7230 `tchar`).
    static let otherTokenCharacters = Set("!#$&'*+^`|".utf8)

    static func isUnreserved(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "-._~".utf8.contains(byte)
    }

    /// Another legal spelling of the §3.6 encoding: any byte may be escaped, in either hex
    /// case, and a byte that may stand in the token (names) or between the quotes (values)
    /// may stand raw.
    static func looseEncode(_ text: String, isName: Bool, _ rng: inout SplitMix64) -> String {
        var out = ""
        for byte in text.utf8 {
            let mayBeRaw = isUnreserved(byte)
                || (isName ? otherTokenCharacters.contains(byte)
                           : (0x20...0x7E).contains(byte) && byte != 0x22 && byte != 0x5C && byte != 0x25)
            if mayBeRaw && rng.chance(isUnreserved(byte) ? 0.8 : 0.5) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: rng.chance(0.5))
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }

    static func entry(_ name: String, _ value: String, canonical: Bool, _ rng: inout SplitMix64) -> String {
        if canonical { return OAuth1.percentEncode(name) + "=\"" + OAuth1.percentEncode(value) + "\"" }
        return looseEncode(name, isName: true, &rng) + bws(&rng) + "=" + bws(&rng) + "\"" + looseEncode(value, isName: false, &rng) + "\""
    }

    static func realmEntry(_ realm: String, _ rng: inout SplitMix64) -> String {
        String("realm".map { rng.chance(0.3) ? Character($0.uppercased()) : $0 }) + "=\"" + realm + "\""
    }

    static func entries(_ spec: OAuthSpec, canonical: Bool, _ rng: inout SplitMix64) -> [String] {
        var entries = spec.parameters.map { entry($0.key, $0.value, canonical: canonical, &rng) }.shuffled(using: &rng)
        if let realm = spec.realm { entries.insert(realmEntry(realm, &rng), at: rng.int(0...entries.count)) }
        return entries
    }

    static func header(_ spec: OAuthSpec, canonical: Bool, _ rng: inout SplitMix64) -> String {
        join(entries(spec, canonical: canonical, &rng), canonical: canonical, &rng)
    }

    /// `OAuth a="1", b="2"`, or with any legal scheme case, white space and empty list elements.
    static func join(_ entries: [String], canonical: Bool, _ rng: inout SplitMix64) -> String {
        if canonical { return "OAuth " + entries.joined(separator: ", ") }
        let scheme = String("oauth".map { rng.chance(0.5) ? Character($0.uppercased()) : $0 })
        var text = rng.pick(["", "", " ", "\t "]) + scheme + rng.pick([" ", "\t", "  ", " \t"]) + (rng.chance(0.1) ? "," + bws(&rng) : "")
        for (index, entry) in entries.enumerated() {
            if index > 0 { text += bws(&rng) + (rng.chance(0.1) ? ", ," : ",") + bws(&rng) }
            text += entry
        }
        return text + (rng.chance(0.1) ? rng.pick([" ", ",", " , ,", "\t"]) : "")
    }

    static func bws(_ rng: inout SplitMix64) -> String { rng.chance(0.8) ? "" : rng.pick([" ", "\t", "  "]) }
}

/// The promises of `OAuthAuthorizationHeader.parse` (its documentation, OAuthErrors.swift).
fileprivate enum OAuthInvariants {
    static func violations(of parsed: OAuthAuthorizationHeader, header: String) -> [String] {
        var found: [String] = []
        func expect(_ condition: Bool, _ message: @autoclosure () -> String) { if !condition { found.append(message()) } }
        expect(header.utf8.allSatisfy { ($0 >= 0x20 && $0 < 0x7F) || $0 == 0x09 },
               "accepted a header with a control or non-ASCII byte, which cannot be sent on unchanged")
        expect(!parsed.parameters.isEmpty || parsed.realm != nil, "accepted a header with no parameters")
        if let realm = parsed.realm {
            expect(realm.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C },
                   "accepted a realm that is not printable ASCII without quote or backslash: \(String(reflecting: realm))")
        }
        expect(!parsed.parameters.keys.contains { $0.lowercased() == "realm" },
               "realm is among the parameters: \(parsed.parameters.keys.sorted())")
        expect(!parsed.parameters.keys.contains(""), "accepted a parameter with an empty name")
        // Rendered again, it parses to the same header.
        let rendered = parsed.headerValue
        do throws(OAuthHeaderError) {
            let again = try OAuthAuthorizationHeader.parse(rendered)
            expect(again == parsed, "its re-rendering \(String(reflecting: rendered)) parses to another header")
        } catch {
            expect(false, "its re-rendering \(String(reflecting: rendered)) is refused: \(error)")
        }
        return found
    }

    static let saysWhatIsWrong = ["header", "parameter", "value", "realm", "scheme", "appears more than once"]

    static func violations(of error: OAuthHeaderError, header: String, secret: String) -> [String] {
        var found: [String] = []
        func expect(_ condition: Bool, _ message: @autoclosure () -> String) { if !condition { found.append(message()) } }
        let reason = error.reason
        expect(!reason.isEmpty, "an empty error reason")
        expect(saysWhatIsWrong.contains { reason.contains($0) }, "the reason does not say what is wrong: \(String(reflecting: reason))")
        expect(reason.count <= 250, "an overlong reason (\(reason.count) characters)")
        expect(error.description == reason, "the error's description differs from its reason")
        // A name is repeated once it has been read up to its `=`: the credential may appear only
        // where the header itself puts it in a name (token characters up to white space and `=`).
        if reason.contains(secret) || String(reflecting: error).contains(secret) {
            expect(isWrittenAsAName(secret, in: header), "the reason repeats a credential: \(String(reflecting: reason))")
        }
        return found
    }

    static func isWrittenAsAName(_ secret: String, in header: String) -> Bool {
        let bytes = Array(header.utf8), needle = Array(secret.utf8)
        func isTokenCharacter(_ byte: UInt8) -> Bool { OAuthText.isUnreserved(byte) || "!#$%&'*+^`|".utf8.contains(byte) }
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where Array(bytes[start..<start + needle.count]) == needle {
            var end = start + needle.count
            while end < bytes.count, isTokenCharacter(bytes[end]) { end += 1 }
            while end < bytes.count, bytes[end] == 0x20 || bytes[end] == 0x09 { end += 1 }
            if end < bytes.count, bytes[end] == UInt8(ascii: "=") { return true }
        }
        return false
    }
}
