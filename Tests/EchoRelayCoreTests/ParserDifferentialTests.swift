@testable import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// The one-pass parser against the one it replaced (`ReferenceEventParser`, a frozen copy),
/// over the fuzz suite's generated, mutated and hostile bodies, random bytes, and a list of
/// bodies at the edges of what `JSONDecoder` takes: for every body, the same event (every
/// field and the fingerprint) or the same error (the same malformed text, the same field
/// problems in the same order).
///
/// Beyond the public answer, each body is also given to `EventBodyReader` alone: when it
/// answers, its canonical bytes must be exactly `JSONValue.canonicalEncoding()`'s and its
/// fields exactly the decoded document's, valid event or not; when it refuses, the reference
/// must refuse with the same text. Runs as many cases as ParserFuzzTests, scaled and seeded
/// by the same `ECHORELAY_FUZZ_SCALE` and `ECHORELAY_FUZZ_SEED`.
@Suite struct ParserDifferentialTests {
    @Test func generatedEventBodies() async {
        await offTheConcurrencyPool {
            var tally = Tally()
            Fuzz.check("differential.generatedEventBodies", cases: 300) { rng, c in
                let spec = EventSpec.random(&rng)
                let body = Array(JSONText.write(spec.tree(&rng), &rng).utf8)
                Differential.check(body, &c, &tally)
            }
            // Most generated bodies carry numbers in their extra fields and so fall back; the
            // rest must really have been read by the one-pass reader.
            #expect(tally.read > 60 && tally.fellBack > 60, "\(tally)")
        }
    }

    @Test func mutatedEventBodies() async {
        await offTheConcurrencyPool {
            var tally = Tally()
            Fuzz.check("differential.mutatedEventBodies", cases: 800) { rng, c in
                let spec = EventSpec.random(&rng)
                let body = Mutate.eventBody(spec, &rng)
                Differential.check(body, &c, &tally)
            }
            // A floor on how many bodies took each path, not an exact count: the generators draw
            // from Swift sets and dictionaries, whose order changes from process to process, so
            // the split moves around its mean (a run read 99).
            #expect(tally.read > 60 && tally.fellBack > 60 && tally.refusedByReader > 40, "\(tally)")
        }
    }

    @Test func oneHostileField() async {
        await offTheConcurrencyPool {
            var tally = Tally()
            Fuzz.check("differential.oneHostileField", cases: 600) { rng, c in
                let spec = EventSpec.random(&rng)
                let field = rng.pick(spec.fields)
                let text = FieldOracle.hostileString(for: field, &rng)
                let value: JSONTree = rng.chance(0.15) ? rng.pick([.null, .bool(true), .raw("12"), .array([.string(text)]), .object([])]) : .string(text)
                let body = Array(JSONText.write(spec.tree(&rng, replacing: field, with: value), &rng).utf8)
                Differential.check(body, &c, &tally)
            }
            #expect(tally.read > 100, "\(tally)")
        }
    }

    @Test func randomBytes() async {
        await offTheConcurrencyPool {
            var tally = Tally()
            Fuzz.check("differential.randomBytes", cases: 2000) { rng, c in
                var body: [UInt8]
                switch rng.int(0...3) {
                case 0:
                    // Half of them inside a string, where the reader checks UTF-8 itself.
                    body = (rng.chance(0.5) ? Array(#"{"x":""#.utf8) : [])
                        + (0..<rng.int(0...256)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                case 1:
                    let alphabet = Array(#"{}[]{}[]"":,,::0123456789-+.eE truefalsnul\u00 "id""type""echo""data"""#.utf8) + [0, 0x0A, 0xC3, 0xA9, 0xFF]
                    body = (0..<rng.int(0...256)).map { _ in rng.pick(alphabet) }
                case 2:
                    // Objects of random keys and random values without numbers: the reader's ground.
                    body = Array(JSONText.write(.object((0..<rng.int(0...8)).map { _ in
                        (rng.pick(["id", "type", "data", "echo", "x", "", "\u{0}", "é", "K", "\u{212A}"]), Differential.numberless(&rng, depth: 4))
                    }), &rng).utf8)
                default:
                    // A valid body cut short, or with one byte replaced: the reader's refusals.
                    body = Array(JSONText.write(EventSpec.random(&rng).tree(&rng), &rng).utf8)
                    if rng.chance(0.5) {
                        body.removeSubrange(rng.int(0...body.count)...)
                    } else if !body.isEmpty {
                        body[rng.int(0...body.count - 1)] = UInt8.random(in: 0...255, using: &rng)
                    }
                }
                Differential.check(body, &c, &tally)
            }
            #expect(tally.read > 200 && tally.refusedByReader > 200, "\(tally)")
        }
    }

    /// Bodies at the edges of what `JSONDecoder` accepts, or of the reader's own refusals.
    static let edges: [String] = [
        "", " ", "{", "}", "{}", "[]", "null", "true", "1", "\"s\"", "{} ", " {} x", "{}{}", "\u{FEFF}{}",
        #"{"a":1,}"#, #"{"a":"b",}"#, #"{"a":["b",]}"#, #"{,"a":"b"}"#, #"{"a" "b"}"#, #"{"a":}"#, #"{"a":"b""c":"d"}"#,
        #"{"a":tru}"#, #"{"a":nulll}"#, #"{"a":True}"#, #"{"a":'b'}"#, "{\"a\":\"b\"\u{C}}", "{\"a\":\"b\"\u{A0}}",
        #"{"a":"\ud800"}"#, #"{"a":"\udc00"}"#, #"{"a":"\ud800\u0041"}"#, #"{"a":"\ud800\"}"#, #"{"a":"\ud800\n"}"#,
        #"{"a":"\u12"}"#, #"{"a":"\u12g4"}"#, #"{"a":"\x41"}"#, #"{"a":"\U0041"}"#, #"{"a":"\"}"#, #"{"a":"\ "}"#,
        "{\"a\":\"x\u{1}y\"}", "{\"a\":\"x\u{7F}y\"}", "{\"a\":\"x\ty\"}", "{\"a\":\"x\ny\"}",
        #"{"a":"b","a":"c"}"#, #"{"a":"b","\u0061":"c"}"#, "{\"\u{212A}\":\"1\",\"K\":\"2\"}", "{\"e\u{301}\":\"1\",\"\u{E9}\":\"2\"}",
        #"{"x":{"a":"b","a":{}}}"#, #"{"x":[{"a":"b","a":"c"}]}"#,
        #"{"a":-}"#, #"{"a":-0}"#, #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":1e400}"#, #"{"a":1e-400}"#, #"{"a":+1}"#,
        #"{"id":1,"type":2,"user_id":3,"occurred_at":4,"data":5,"echo":6}"#,
        #"{"id":"e","type":"token.rotated","user_id":"u","occurred_at":"2026-01-01T00:00:00Z","echo":{"service_provider":"https://a.example/v","authorization":"OAuth x=1"},"id":"f"}"#,
        #"{"id":"e","type":"phone.changed","user_id":"u","occurred_at":"2026-01-01T00:00:00Z","data":{"phone_number":null},"echo":{"service_provider":"https://a.example/v","authorization":"OAuth x=1"}}"#,
        #"{"id":"e","type":"token.rotated","user_id":"u","occurred_at":"2026-01-01T00:00:00Z","data":{"phone_number":null},"echo":{"service_provider":"https://a.example/v","authorization":"OAuth x=1"}}"#,
        #"{"id":"e","type":"token.rotated","user_id":"u","occurred_at":"2026-01-01T00:00:00Z","data":[],"echo":"x"}"#,
        #"{"data":{"echo":{"service_provider":"https://a.example/v"}},"echo":{"data":{"phone_number":"+15555550100"}}}"#,
    ] + FingerprintCompatibilityTests.pinned.map(\.1)

    @Test func edgesOfJSON() {
        var tally = Tally()
        let nested = { (depth: Int) in String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
        var bodies = Self.edges.map { Array($0.utf8) }
        for depth in [30, 31, 32, 33, 100] {
            for tail in [[], [0xFF], Array(#""\ud800""#.utf8), Array("1".utf8)] as [[UInt8]] {
                // Deep, then valid or invalid UTF-8, then more: which error comes first.
                bodies.append(Array(#"{"x":"#.utf8) + Array(nested(depth).utf8) + tail + Array("}".utf8))
                bodies.append(Array(#"{"x":"#.utf8) + Array(String(repeating: "[", count: depth).utf8) + tail)
                bodies.append(Array(#"{"x":"#.utf8) + Array(String(repeating: #"{"a":"#, count: depth).utf8) + tail)
            }
        }
        for (index, body) in bodies.enumerated() {
            var c = Fuzz.Case()
            Differential.check(body, &c, &tally)
            if !c.problems.isEmpty { Issue.record("edge \(index): \(c.problems.joined(separator: "; "))\n  input: \(c.input)") }
        }
        #expect(tally.read > 20 && tally.fellBack > 50 && tally.refusedByReader > 20, "\(tally)")
    }
}

/// How the bodies of one property were answered: by the reader, by the reader refusing, or
/// by the reference after the reader let go.
struct Tally: CustomStringConvertible {
    var read = 0, refusedByReader = 0, fellBack = 0
    var description: String { "read \(read), refused by the reader \(refusedByReader), fell back \(fellBack)" }
}

enum Differential {
    /// Everything an accepted event carries, comparable.
    struct Event: Equatable {
        var id: String, type: EventType, userID: [Unicode.Scalar], occurredAt: Date, phoneNumber: String?
        var serviceProvider: [Unicode.Scalar], authorization: [Unicode.Scalar], accessToken: [Unicode.Scalar], fingerprint: [UInt8]

        init(_ event: IncomingEvent) {
            id = event.id
            type = event.type
            userID = Array(event.userID.unicodeScalars)
            occurredAt = event.occurredAt
            phoneNumber = event.phoneNumber
            serviceProvider = Array((event.echo?.serviceProvider ?? "").unicodeScalars)
            authorization = Array((event.echo?.authorization.revealed ?? "").unicodeScalars)
            accessToken = Array((event.oauth2?.accessToken.revealed ?? "").unicodeScalars)
            fingerprint = event.fingerprint
        }
    }

    static func outcome(_ parse: () throws(EventParseError) -> IncomingEvent) -> Result<Event, EventParseError> {
        do throws(EventParseError) { return .success(Event(try parse())) } catch { return .failure(error) }
    }

    static func check(_ body: [UInt8], _ c: inout Fuzz.Case, _ tally: inout Tally) {
        c.input = Fuzz.show(body)
        let new = outcome { () throws(EventParseError) in try IncomingEvent.parse(body: body) }
        let old = outcome { () throws(EventParseError) in try ReferenceEventParser.parse(body: body) }
        c.check(new == old, "the parsers disagree: new \(new), reference \(old)")

        // The reader alone, on any body, event or not.
        let read = body.withUnsafeBytes { bytes in
            Result { () throws(EventParseError) in try EventBodyReader.read(bytes) }
        }
        switch read {
        case .failure(let error):
            tally.refusedByReader += 1
            c.check(old == .failure(error), "the reader refused with \(error), the reference answered \(old)")
        case .success(nil):
            tally.fellBack += 1
        case .success(let (fields, canonical)?):
            tally.read += 1
            guard case .object(let document)? = try? JSONValue.parse(body) else {
                c.check(false, "the reader read a body that JSONDecoder does not decode to an object")
                return
            }
            let expected = Array(JSONValue.object(document).canonicalEncoding())
            c.check(canonical == expected, "canonical form \(Fuzz.show(canonical)), JSONEncoder's \(Fuzz.show(expected))")
            c.check(fields == EventBodyFields(document: document), "fields \(fields), decoded \(EventBodyFields(document: document))")
        }
    }

    /// A random value without numbers, strings of any scalar included.
    static func numberless(_ rng: inout SplitMix64, depth: Int) -> JSONTree {
        switch rng.int(0...(depth > 0 ? 6 : 3)) {
        case 0: return .null
        case 1: return .bool(rng.chance(0.5))
        case 2, 3: return .string(Gen.anyText(&rng, length: 0...12))
        case 4: return .array((0..<rng.int(0...4)).map { _ in numberless(&rng, depth: depth - 1) })
        default:
            return .object((0..<rng.int(0...4)).map { _ in
                (rng.chance(0.2) ? rng.pick(["a", "b", "K", "\u{212A}"]) : Gen.anyText(&rng, length: 0...6), numberless(&rng, depth: depth - 1))
            })
        }
    }
}
