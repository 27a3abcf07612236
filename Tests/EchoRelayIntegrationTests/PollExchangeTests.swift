import EchoRelayCore
import EchoRelaySharedSignals
import Foundation
import Testing

/// The poll's wire form (RFC 8936 §2.4, §2.5): what EchoRelay sends, and the transmitter's
/// answer read in the order it lists its SETs. The answer is outside input, so it is fuzzed.
@Suite struct PollExchangeTests {
    static func token(_ index: Int) -> String {
        "eyJhbGciOiJSUzI1NiJ9.eyJqdGkiOiJq\(index)In0.c2lnbmF0dXJl\(String(repeating: "x", count: index % 7))"
    }

    @Test func aPollSaysHowManyItTakesThatItWaitsAndWhatBecameOfTheLastAnswer() throws {
        let request = PollExchange.Request(maxEvents: 7, ack: ["a", "b"], setErrs: ["c": .init(err: "invalid_key", description: "no key")])
        let body = try #require(try JSONValue.parse(request.body()).objectValue)
        #expect(body["maxEvents"] == .integer(7))
        #expect(body["returnImmediately"] == .bool(false))
        #expect(body["ack"] == .array([.string("a"), .string("b")]))
        #expect(body["setErrs"] == .object(["c": .object(["err": .string("invalid_key"), "description": .string("no key")])]))
        let empty = try #require(try JSONValue.parse(PollExchange.Request(maxEvents: 1).body()).objectValue)
        #expect(empty["setErrs"] == nil && empty["ack"] == .array([]))
    }

    @Test func theAnswersSetsAreTakenInTheOrderTheTransmitterWroteThem() throws {
        let jtis = (0 ..< 60).map { "jti-\(($0 * 37) % 60)" }  // not in any sorted order
        let members = jtis.enumerated().map { index, jti in "\"\(jti)\": \"\(Self.token(index))\"" }
        let body = Array("{\"sets\": {\(members.joined(separator: ", "))}, \"moreAvailable\": true}".utf8)
        let answer = try PollExchange.Answer.parse(body)
        #expect(answer.sets.map(\.jti) == jtis)
        #expect(answer.sets.map(\.token) == jtis.indices.map(Self.token))
        #expect(answer.moreAvailable)
        #expect(try PollExchange.Answer.parse(Array(#"{"sets": {}}"#.utf8)) == .init(sets: [], moreAvailable: false))
    }

    @Test(arguments: [
        (#"[]"#, "the answer is not a JSON object"), (#"{"sets": []}"#, "sets is not an object"),
        (#"{"sets": {"a": 1}}"#, "the SET under a jti is not a string"), (#"{"sets": {}, "moreAvailable": "yes"}"#, "moreAvailable is not a boolean"),
        (String(repeating: "[", count: 40) + String(repeating: "]", count: 40), "the answer is not a JSON object"),
        (#"{"sets": {"a": "x.y.z", "\u0061": "p.q.r"}}"#, "sets names a jti more than once"),
    ])
    func anAnswerThatIsNotRFC8936sIsMalformedWithWhy(body: String, why: String) {
        #expect(throws: PollExchange.PollError.malformed(why)) { try PollExchange.Answer.parse(Array(body.utf8)) }
    }

    /// Answers damaged a byte at a time, cut short and made up: each reads as exactly the SETs
    /// Foundation's own JSON parser finds in it, or is malformed. Nothing else: no crash, no SET
    /// that was not in it, none left out.
    @Test func damagedAnswersAreReadOrRefusedAndNeverInventASet() throws {
        let members = (0 ..< 8).map { "\"j\($0)\": \"\(Self.token($0))\"" }
        let original = Array("{\"sets\": {\(members.joined(separator: ","))}, \"moreAvailable\": false}".utf8)
        let alphabet = Array("{}[]\":,.\\ 0123456789abcdefjtruenl\u{0}é".utf8)
        var generator = SystemRandomNumberGenerator()
        var damaged: [[UInt8]] = (0 ..< 2000).map { _ in
            var body = original
            for _ in 0 ..< Int.random(in: 1 ... 3, using: &generator) {
                body[Int.random(in: 0 ..< body.count, using: &generator)] = alphabet.randomElement(using: &generator)!
            }
            return body
        }
        damaged += stride(from: 0, to: original.count, by: 5).map { Array(original[..<$0]) }
        damaged += (0 ..< 200).map { _ in (0 ..< Int.random(in: 0 ..< 300, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! } }
        for body in damaged {
            do {
                let answer = try PollExchange.Answer.parse(body)
                let reference = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
                let sets = reference?["sets"] as? [String: String] ?? [:]
                #expect(Dictionary(uniqueKeysWithValues: answer.sets.map { ($0.jti, $0.token) }) == sets,
                        "not the SETs the answer holds: \(String(decoding: body, as: UTF8.self))")
            } catch {
                guard case .malformed = error else { Issue.record("\(error)"); continue }
            }
        }
    }
}
