import Crypto
@testable import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// What the one-pass reader answers for itself, and what it leaves to the reference path.
@Suite struct EventBodyReaderTests {
    static func read(_ body: [UInt8]) -> Result<(fields: EventBodyFields, canonical: [UInt8])?, EventParseError> {
        body.withUnsafeBytes { bytes in Result { () throws(EventParseError) in try EventBodyReader.read(bytes) } }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// The pinned bodies that hold only objects, arrays, strings and literals, each key once,
    /// are read by the reader itself, and its canonical form hashes to the pinned fingerprint;
    /// the others (numbers, repeated or equivalent keys) are left to the reference path.
    @Test func readsThePinnedBodiesItCanAndHashesThemAsPinned() throws {
        let leftToTheReference: Set<String> = [
            "integers", "decimals", "exponents", "big values", "duplicate keys: the first is kept",
            "a duplicate known field: the first is kept", "keys that sort by their UTF-8 bytes",
            "canonically equivalent keys: the first is kept", "nested objects and arrays",
        ]
        for (name, body, pinned) in FingerprintCompatibilityTests.pinned {
            let result = try Self.read(Array(body.utf8)).get()
            if leftToTheReference.contains(name) {
                #expect(result == nil, "\(name) should be left to the reference path")
            } else if let result {
                #expect(Self.hex(SHA256.hash(data: result.canonical)) == pinned, "\(name)")
            } else {
                Issue.record("\(name) was not read by the reader")
            }
        }
    }

    @Test func readsTheBenchmarkBodyAndItsFields() throws {
        let body = Array(FingerprintCompatibilityTests.benchmarkTokenRotated.utf8)
        let read = try #require(try Self.read(body).get())
        #expect(read.fields.id == .string("evt_123"))
        #expect(read.fields.type == .string("token.rotated"))
        #expect(read.fields.userID == .string("u42"))
        #expect(read.fields.occurredAt == .string("2026-11-24T10:00:00Z"))
        #expect(read.fields.data == .object)
        #expect(read.fields.phoneNumber == nil)
        #expect(read.fields.echo == .object)
        #expect(read.fields.serviceProvider == .string("https://api.example.com/1.1/account/verify_credentials.json"))
        #expect(read.fields.authorization?.typeName == "a string")
    }

    /// Members come out in the order of their keys' UTF-8 bytes, as `JSONEncoder` sorts them on
    /// Linux (not by `String` comparison, which would put "a\n" and "é" elsewhere).
    @Test func sortsMembersByTheirKeysUTF8Bytes() throws {
        let body = Array(#"{"x":{"b":"1","a":"2","B":"3","_":"4","aa":"5","a b":"6","é":"7","z":"8","a\n":"9","a!":"10","":"11","\u0000":"12","~":"13","😀":"14","ÿ":"15","\u00e8":"16"}}"#.utf8)
        let read = try #require(try Self.read(body).get())
        #expect(read.canonical == Array(try JSONValue.parse(body).canonicalEncoding()))
        #expect(String(decoding: read.canonical, as: UTF8.self)
            == #"{"x":{"":"11","\u0000":"12","B":"3","_":"4","a":"2","a\n":"9","a b":"6","a!":"10","aa":"5","b":"1","z":"8","~":"13","è":"16","é":"7","ÿ":"15","😀":"14"}}"#)
    }

    @Test(arguments: [
        #"{"a":1}"#, #"{"a":-0}"#, #"{"a":"b","a":"c"}"#, "{\"\u{212A}\":\"1\",\"K\":\"2\"}", #"{"a":"b",}"#, #"["b"]"#, #""s""#,
        "\u{FEFF}{}", "{\"a\":\"\u{1}\"}", #"{"a":"\ud800"}"#, #"{"a":"\udc00\ud800"}"#, #"{"a":"\x"}"#, "{} x", "",
    ])
    func leavesToTheReference(body: String) throws {
        #expect(try Self.read(Array(body.utf8)).get() == nil)
    }

    /// Its UTF-8 check inside strings refuses exactly what `String(validating:)` refuses: every
    /// lead byte with every second byte, and every 3- and 4-byte lead with continuations at
    /// and around the edges of their ranges.
    @Test func checksUTF8AsTheStandardLibraryDoes() async {
        await offTheConcurrencyPool {
            let edges: [UInt8] = [0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xF0, 0xF4, 0xF5, 0xFF]
            var sequences: [[UInt8]] = []
            for lead in UInt8(0x80)...0xFF {
                for second in UInt8(0x00)...0xFF { sequences += [[lead, second], [lead, second, 0x80, 0x80], [lead, second, 0x41]] }
            }
            for lead in UInt8(0xE0)...0xF4 {
                for second in edges { for third in edges { for fourth in edges { sequences.append([lead, second, third, fourth]) } } }
            }
            var mismatches: [[UInt8]] = []
            for sequence in sequences where !sequence.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
                let body = Array(#"{"x":""#.utf8) + sequence + Array(#""}"#.utf8)
                let isUTF8 = String(validating: body, as: UTF8.self) != nil
                switch Self.read(body) {
                case .success(let read?): if !isUTF8 || read.canonical != body { mismatches.append(sequence) }
                case .failure(.malformed(MalformedBodyReason.notUTF8)): if isUTF8 { mismatches.append(sequence) }
                default: mismatches.append(sequence)
                }
            }
            #expect(mismatches.isEmpty, "\(mismatches.prefix(10).map { Self.hex($0) })")
            #expect(sequences.count > 100_000)
        }
    }

    /// Deeper than the limit: refused as too deep unless bytes after it are not UTF-8, which
    /// the reference checks first.
    @Test func refusesDeepNestingAfterCheckingTheRestIsUTF8() {
        let deep = Array((#"{"x":"# + String(repeating: "[", count: JSONValue.maximumDepth)).utf8)
        #expect(Self.read(deep + Array("]".utf8)) == .failure(.malformed(MalformedBodyReason.tooDeep)))
        #expect(Self.read(deep + [0xFF]) == .failure(.malformed(MalformedBodyReason.notUTF8)))
        let justDeepEnough = Array((#"{"x":"# + String(repeating: "[", count: JSONValue.maximumDepth - 1)
            + String(repeating: "]", count: JSONValue.maximumDepth - 1) + "}").utf8)
        #expect((try? Self.read(justDeepEnough).get()) != nil)
    }
}

extension Result where Success == (fields: EventBodyFields, canonical: [UInt8])?, Failure == EventParseError {
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.failure(let a), .failure(let b)): a == b
        case (.success(let a), .success(let b)): a?.fields == b?.fields && a?.canonical == b?.canonical
        default: false
        }
    }
}
