extension Sequence where Element == UInt8 {
    /// The bytes as lowercase hexadecimal, two digits each: built from a table, not a
    /// formatted string per byte (a webhook id is made per delivery).
    public var lowercaseHex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
