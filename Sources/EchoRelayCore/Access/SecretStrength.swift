import Foundation

/// A rough floor on how hard a secret set by hand is to guess, for refusing weak ones at
/// start. Each character counts log2 of the size of the character classes the secret uses
/// (lower case 26, upper case 26, digits 10, anything else 33), except a character that
/// repeats the one before it, which counts nothing, and a text that repeats itself
/// (`abcabc…`) counts once. A secret made of random bytes scores at least its bits; a word,
/// a date or a short string scores below 128. It cannot see that a long phrase is guessable.
public enum SecretStrength {
    /// What `serve` asks of a token or secret set by hand.
    public static let minimumBits = 128.0

    public static func estimatedBits(_ text: String) -> Double {
        var lower = false, upper = false, digit = false, other = false
        let characters = Array(text)
        var counted = 0
        var previous: Character?
        for character in characters.prefix(period(of: characters)) {
            if character.isASCII && character.isLowercase { lower = true }
            else if character.isASCII && character.isUppercase { upper = true }
            else if character.isASCII && character.isNumber { digit = true }
            else { other = true }
            if character != previous { counted += 1 }
            previous = character
        }
        let pool = (lower ? 26 : 0) + (upper ? 26 : 0) + (digit ? 10 : 0) + (other ? 33 : 0)
        return pool > 1 ? Double(counted) * log2(Double(pool)) : 0
    }

    /// The length of the shortest unit the text repeats (all of it when it repeats nothing).
    private static func period(of characters: [Character]) -> Int {
        guard characters.count > 1 else { return characters.count }
        for unit in 1...(characters.count / 2) where (unit..<characters.count).allSatisfy({ characters[$0] == characters[$0 - unit] }) {
            return unit
        }
        return characters.count
    }

    public static func isStrong(_ text: String) -> Bool {
        estimatedBits(text) >= minimumBits
    }

    /// Whether a key of `bytes` random bytes (a `whsec_` secret) holds 128 bits.
    public static func isStrong(keyBytes bytes: Int) -> Bool {
        Double(bytes * 8) >= minimumBits
    }
}
