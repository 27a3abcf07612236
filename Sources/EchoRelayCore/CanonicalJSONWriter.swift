/// Writes a JSON document in the canonical form that `JSONValue.canonicalEncoding()` gives it
/// (swift-foundation's `JSONEncoder` with `.sortedKeys, .withoutEscapingSlashes`), while the
/// document is being read, without building a tree of it.
///
/// Invariant: once an object is closed, its members stand in the order of their keys' UTF-8
/// bytes (what `JSONWriter` sorts by on Linux), separated by single commas, with no white space
/// anywhere, and every string escaped as `JSONWriter.serializeString` escapes it.
struct CanonicalJSONWriter {
    private(set) var bytes: [UInt8] = []

    /// A member of an object that is still open: where its unescaped key lies in `keys`, and
    /// where its `"key":value` text lies in `bytes` (without the comma before it).
    private struct Member {
        var keyStart: Int
        var keyEnd: Int
        var textStart: Int
        var textEnd: Int
    }

    private struct OpenObject {
        var firstMember: Int
        var keysStart: Int
        /// Where the members' text starts in `bytes`, just after the `{`.
        var contentStart: Int
    }

    /// The unescaped keys of the open objects' members, one after another.
    private var keys: [UInt8] = []
    private var members: [Member] = []
    private var objects: [OpenObject] = []

    init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    mutating func append(_ byte: UInt8) {
        bytes.append(byte)
    }

    mutating func append(_ run: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: run)
    }

    /// One scalar of a string's content, escaped as `JSONWriter` escapes it: `"` and `\`, the
    /// C0 controls (`\b \f \n \r \t`, others as `\u00XX` in lower-case hex); everything else,
    /// `/`, DEL and non-ASCII included, as its UTF-8 bytes.
    mutating func appendEscaped(_ scalar: Unicode.Scalar) {
        switch scalar.value {
        case 0x22: appendEscape(UInt8(ascii: "\""))
        case 0x5C: appendEscape(UInt8(ascii: "\\"))
        case 0x08: appendEscape(UInt8(ascii: "b"))
        case 0x0C: appendEscape(UInt8(ascii: "f"))
        case 0x0A: appendEscape(UInt8(ascii: "n"))
        case 0x0D: appendEscape(UInt8(ascii: "r"))
        case 0x09: appendEscape(UInt8(ascii: "t"))
        case 0..<0x20:
            let value = UInt8(scalar.value)
            appendEscape(UInt8(ascii: "u"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(Self.lowerHex(value >> 4))
            bytes.append(Self.lowerHex(value & 0xF))
        case 0..<0x80:
            bytes.append(UInt8(scalar.value))
        default:
            bytes.append(contentsOf: UTF8.encode(scalar)!)
        }
    }

    private mutating func appendEscape(_ letter: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(letter)
    }

    private static func lowerHex(_ digit: UInt8) -> UInt8 {
        digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
    }

    // MARK: Objects

    mutating func openObject() {
        bytes.append(UInt8(ascii: "{"))
        objects.append(OpenObject(firstMember: members.count, keysStart: keys.count, contentStart: bytes.count))
    }

    /// Starts a member of the innermost open object; its key's canonical text comes next.
    mutating func beginMember() {
        if members.count > objects[objects.count - 1].firstMember { bytes.append(UInt8(ascii: ",")) }
        members.append(Member(keyStart: keys.count, keyEnd: keys.count, textStart: bytes.count, textEnd: bytes.count))
    }

    /// The unescaped bytes of the key just written, by which the member is sorted.
    mutating func setKey(_ unescaped: [UInt8]) {
        keys.append(contentsOf: unescaped)
        members[members.count - 1].keyEnd = keys.count
    }

    /// Ends the member whose value was just written.
    mutating func endMember() {
        members[members.count - 1].textEnd = bytes.count
    }

    /// Puts the innermost open object's members in key order and closes it. Returns false,
    /// leaving the output unusable, when two keys are the same `String` (byte for byte, or
    /// canonically equivalent): `JSONDecoder` keeps only the first of them, which this writer
    /// does not reproduce.
    mutating func closeObject() -> Bool {
        let object = objects.removeLast()
        defer {
            members.removeSubrange(object.firstMember...)
            keys.removeSubrange(object.keysStart...)
        }
        let count = members.count - object.firstMember
        if count > 1 {
            guard sortMembers(of: object), !hasEquivalentKeys(object) else { return false }
        }
        bytes.append(UInt8(ascii: "}"))
        return true
    }

    /// Sorts the object's members by key, rewriting their text in that order. Returns false if
    /// two keys are equal.
    private mutating func sortMembers(of object: OpenObject) -> Bool {
        let range = object.firstMember..<members.count
        let reordered: [Member]? = keys.withUnsafeBufferPointer { keys in
            func key(_ member: Member) -> UnsafeBufferPointer<UInt8> {
                UnsafeBufferPointer(rebasing: keys[member.keyStart..<member.keyEnd])
            }
            if range.dropFirst().allSatisfy({ key(members[$0 - 1]).lexicographicallyPrecedes(key(members[$0])) }) {
                return []  // already in order, and so no key twice
            }
            var sorted = Array(members[range])
            sorted.sort { key($0).lexicographicallyPrecedes(key($1)) }
            for index in sorted.indices.dropFirst() where key(sorted[index - 1]).elementsEqual(key(sorted[index])) {
                return nil
            }
            return sorted
        }
        guard let reordered else { return false }
        guard !reordered.isEmpty else { return true }

        let text = Array(bytes[object.contentStart...])
        bytes.removeSubrange(object.contentStart...)
        for (position, member) in reordered.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: text[(member.textStart - object.contentStart)..<(member.textEnd - object.contentStart)])
        }
        return true
    }

    /// Keys with distinct bytes can still be equal `String`s (U+212A KELVIN SIGN and `K`, a
    /// precomposed and a decomposed `é`), and a `[String: JSONValue]` holds only one of them.
    /// Only non-ASCII keys can be equivalent to another key, so ASCII objects skip the check.
    private func hasEquivalentKeys(_ object: OpenObject) -> Bool {
        guard keys[object.keysStart...].contains(where: { $0 >= 0x80 }) else { return false }
        let objectMembers = members[object.firstMember...]
        let distinct = Set(objectMembers.map { String(decoding: keys[$0.keyStart..<$0.keyEnd], as: UTF8.self) })
        return distinct.count < objectMembers.count
    }
}
