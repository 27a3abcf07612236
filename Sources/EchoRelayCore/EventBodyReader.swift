/// Reads a `POST /v1/events` body in one pass over its contiguous bytes: checks its UTF-8,
/// nesting depth and JSON syntax, keeps the values the validator reads, and writes the body's
/// canonical form (the fingerprint's input) as it goes, with no tree in between.
///
/// It answers only where its reading is provably the reference path's (`JSONValue.parse`,
/// that is `JSONDecoder`, then `canonicalEncoding()`, that is `JSONEncoder`): strict JSON
/// made of objects, arrays, strings, `true`, `false` and `null`, with an object at the root
/// and no key twice in an object. Everything else answers nil, and the reference decides:
/// numbers (`JSONDecoder` and `JSONEncoder` decide what they become), repeated keys (the
/// decoder keeps the first one's value and never looks at the others), and every syntax error
/// (the decoder also takes some text that is not strict JSON: trailing commas, a byte-order
/// mark, UTF-16). The reader's own refusals are the two that a prefix settles whatever
/// follows: bytes that are not UTF-8, and nesting deeper than `JSONValue.maximumDepth`.
struct EventBodyReader {
    /// The fields and canonical form of `body`, or nil when the reference path must read it.
    static func read(_ body: UnsafeRawBufferPointer) throws(EventParseError) -> (fields: EventBodyFields, canonical: [UInt8])? {
        // Binding bytes to UInt8 is valid for any memory, and lets runs be copied with memcpy.
        try body.withMemoryRebound(to: UInt8.self) { (bytes) throws(EventParseError) in try read(bytes) }
    }

    private static func read(_ body: UnsafeBufferPointer<UInt8>) throws(EventParseError) -> (fields: EventBodyFields, canonical: [UInt8])? {
        var reader = EventBodyReader(bytes: body)
        do throws(Stop) {
            try reader.readDocument()
            return (reader.fields, reader.output.bytes)
        } catch {
            switch error {
            case .unsupported:
                return nil
            case .notUTF8:
                throw .malformed(MalformedBodyReason.notUTF8)
            case .tooDeep:
                // The reference checks UTF-8 over the whole body before it counts brackets, so
                // the rest of the body decides which of the two it reports. All before the
                // bracket was read, so it is UTF-8, and the bracket starts a sequence.
                let rest = UnsafeBufferPointer(rebasing: body[reader.index...])
                guard String(validating: rest, as: UTF8.self) != nil else { throw .malformed(MalformedBodyReason.notUTF8) }
                throw .malformed(MalformedBodyReason.tooDeep)
            }
        }
    }

    /// Why reading stopped short.
    private enum Stop: Error {
        /// Not strict JSON, or JSON whose decoding this reader does not reproduce exactly.
        case unsupported
        case notUTF8
        case tooDeep
    }

    /// Where an object lies, which decides the fields its members can be.
    private enum Place {
        case root, data, echo, oauth2, elsewhere
    }

    private enum Field {
        case id, type, userID, occurredAt, data, echo, oauth2, phoneNumber, serviceProvider, authorization, accessToken
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0
    private var fields = EventBodyFields()
    private var output: CanonicalJSONWriter
    /// The unescaped bytes of the string read last, when they were asked for.
    private var text: [UInt8] = []

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        // Canonical text is never longer than the body: white space goes, and every escape
        // comes out no longer than it went in.
        output = CanonicalJSONWriter(capacity: bytes.count)
        text.reserveCapacity(256)
    }

    /// The byte at `index`, or 0 (never valid outside a string) at the end.
    private var next: UInt8 {
        index < bytes.count ? bytes[index] : 0
    }

    private mutating func readDocument() throws(Stop) {
        skipWhiteSpace()
        // Another root is refused, naming its type: the reference words that.
        guard next == UInt8(ascii: "{") else { throw .unsupported }
        try readObject(.root)
        skipWhiteSpace()
        guard index == bytes.count else { throw .unsupported }
    }

    private mutating func skipWhiteSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Reads a value, starting at its first byte. A string's text is kept only if asked for
    /// (a field's value); otherwise the string comes back empty, and no `String` is made.
    private mutating func readValue(_ place: Place, keepingText: Bool) throws(Stop) -> FieldValue {
        switch next {
        case UInt8(ascii: "\""):
            try readString(keepingText: keepingText)
            return .string(keepingText ? String(decoding: text, as: UTF8.self) : "")
        case UInt8(ascii: "{"):
            try readObject(place)
            return .object
        case UInt8(ascii: "["):
            try readArray()
            return .array
        case UInt8(ascii: "t"):
            try readLiteral("true")
            return .boolean
        case UInt8(ascii: "f"):
            try readLiteral("false")
            return .boolean
        case UInt8(ascii: "n"):
            try readLiteral("null")
            return .null
        default:
            throw .unsupported  // numbers among them
        }
    }

    private mutating func readLiteral(_ literal: StaticString) throws(Stop) {
        let literalBytes = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        guard index + literalBytes.count <= bytes.count,
              UnsafeBufferPointer(rebasing: bytes[index..<index + literalBytes.count]).elementsEqual(literalBytes)
        else { throw .unsupported }
        output.append(literalBytes)
        index += literalBytes.count
    }

    private mutating func enterContainer() throws(Stop) {
        depth += 1
        if depth > JSONValue.maximumDepth { throw .tooDeep }
        index += 1
    }

    private mutating func readObject(_ place: Place) throws(Stop) {
        try enterContainer()
        output.openObject()
        skipWhiteSpace()
        if next == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                guard next == UInt8(ascii: "\"") else { throw .unsupported }
                output.beginMember()
                try readString(keepingText: true)
                output.setKey(text)
                let field = Self.field(named: text, in: place)
                skipWhiteSpace()
                guard next == UInt8(ascii: ":") else { throw .unsupported }
                index += 1
                output.append(UInt8(ascii: ":"))
                skipWhiteSpace()
                let inner: Place = switch field {
                case .data?: .data
                case .echo?: .echo
                case .oauth2?: .oauth2
                default: .elsewhere
                }
                let value = try readValue(inner, keepingText: field != nil)
                if let field { set(field, value) }
                output.endMember()
                skipWhiteSpace()
                if next == UInt8(ascii: ",") {
                    index += 1
                    skipWhiteSpace()
                    continue
                }
                guard next == UInt8(ascii: "}") else { throw .unsupported }
                index += 1
                break
            }
        }
        guard output.closeObject() else { throw .unsupported }
        depth -= 1
    }

    private mutating func readArray() throws(Stop) {
        try enterContainer()
        output.append(UInt8(ascii: "["))
        skipWhiteSpace()
        if next == UInt8(ascii: "]") {
            index += 1
        } else {
            while true {
                _ = try readValue(.elsewhere, keepingText: false)
                skipWhiteSpace()
                if next == UInt8(ascii: ",") {
                    index += 1
                    output.append(UInt8(ascii: ","))
                    skipWhiteSpace()
                    continue
                }
                guard next == UInt8(ascii: "]") else { throw .unsupported }
                index += 1
                break
            }
        }
        output.append(UInt8(ascii: "]"))
        depth -= 1
    }

    // MARK: Fields

    private static func field(named key: [UInt8], in place: Place) -> Field? {
        func isKey(_ name: StaticString) -> Bool {
            guard key.count == name.utf8CodeUnitCount else { return false }
            for offset in key.indices where key[offset] != name.utf8Start[offset] { return false }
            return true
        }
        switch place {
        case .root:
            switch key.count {
            case 2: return isKey("id") ? .id : nil
            case 4: return isKey("type") ? .type : isKey("data") ? .data : isKey("echo") ? .echo : nil
            case 6: return isKey("oauth2") ? .oauth2 : nil
            case 7: return isKey("user_id") ? .userID : nil
            case 11: return isKey("occurred_at") ? .occurredAt : nil
            default: return nil
            }
        case .data:
            return isKey("phone_number") ? .phoneNumber : nil
        case .echo:
            return isKey("service_provider") ? .serviceProvider : isKey("authorization") ? .authorization : nil
        case .oauth2:
            return isKey("access_token") ? .accessToken : nil
        case .elsewhere:
            return nil
        }
    }

    private mutating func set(_ field: Field, _ value: FieldValue) {
        switch field {
        case .id: fields.id = value
        case .type: fields.type = value
        case .userID: fields.userID = value
        case .occurredAt: fields.occurredAt = value
        case .data: fields.data = value
        case .echo: fields.echo = value
        case .phoneNumber: fields.phoneNumber = value
        case .serviceProvider: fields.serviceProvider = value
        case .authorization: fields.authorization = value
        case .oauth2: fields.oauth2 = value
        case .accessToken: fields.accessToken = value
        }
    }

    // MARK: Strings

    /// Reads a string from its opening quote: checks its UTF-8 and escapes, writes its
    /// canonical form, and leaves its unescaped bytes in `text` if `keepingText`.
    private mutating func readString(keepingText: Bool) throws(Stop) {
        index += 1
        if keepingText { text.removeAll(keepingCapacity: true) }
        output.append(UInt8(ascii: "\""))
        var runStart = index
        while true {
            // The common run: printable ASCII other than the quote and the backslash.
            while index < bytes.count, case let byte = bytes[index], byte >= 0x20, byte < 0x80,
                  byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                index += 1
            }
            guard index < bytes.count else { throw .unsupported }
            let byte = bytes[index]
            if byte >= 0x80 {
                index = try endOfSequence(startingAt: index)
            } else {
                let run = UnsafeBufferPointer(rebasing: bytes[runStart..<index])
                output.append(run)
                if keepingText { text.append(contentsOf: run) }
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    output.append(UInt8(ascii: "\""))
                    return
                }
                // `JSONDecoder` refuses a raw control character; the reference says so.
                guard byte == UInt8(ascii: "\\") else { throw .unsupported }
                let scalar = try readEscape()
                output.appendEscaped(scalar)
                if keepingText {
                    if scalar.isASCII { text.append(UInt8(scalar.value)) } else { text.append(contentsOf: UTF8.encode(scalar)!) }
                }
                runStart = index
            }
        }
    }

    /// The scalar an escape stands for, from its backslash; a `\u` escape of a high surrogate
    /// must be followed by one of a low surrogate, as `JSONDecoder` requires.
    private mutating func readEscape() throws(Stop) -> Unicode.Scalar {
        guard index + 1 < bytes.count else { throw .unsupported }
        let escaped = bytes[index + 1]
        index += 2
        switch escaped {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try readHexUnit()
            if UTF16.isLeadSurrogate(unit) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw .unsupported
                }
                index += 2
                let trail = try readHexUnit()
                guard UTF16.isTrailSurrogate(trail) else { throw .unsupported }
                return UTF16.decode(UTF16.EncodedScalar([unit, trail]))
            }
            guard let scalar = Unicode.Scalar(unit) else { throw .unsupported }  // a lone low surrogate
            return scalar
        default:
            throw .unsupported
        }
    }

    /// The four hex digits of a `\u` escape.
    private mutating func readHexUnit() throws(Stop) -> UInt16 {
        guard index + 4 <= bytes.count else { throw .unsupported }
        var unit: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .unsupported
            }
            unit = unit << 4 | UInt16(digit)
            index += 1
        }
        return unit
    }

    /// The end of the multi-byte UTF-8 sequence at `start`, checked against table 3-7 of the
    /// Unicode standard (§3.9) — the well-formed sequences, which are exactly what
    /// `String(validating:as: UTF8.self)` accepts. Everything before `start` was read as
    /// UTF-8, so a bad sequence here makes the whole body not UTF-8.
    private func endOfSequence(startingAt start: Int) throws(Stop) -> Int {
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        let length: Int
        switch bytes[start] {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondLow = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondHigh = 0x9F
        case 0xF0: length = 4; secondLow = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondHigh = 0x8F
        default: throw .notUTF8
        }
        guard start + length <= bytes.count else { throw .notUTF8 }
        guard (secondLow...secondHigh).contains(bytes[start + 1]) else { throw .notUTF8 }
        for offset in 2..<length where bytes[start + offset] & 0xC0 != 0x80 {
            throw .notUTF8
        }
        return start + length
    }
}
