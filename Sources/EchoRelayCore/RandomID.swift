/// Random identifiers for rows clients see (`sub_…`, `rpl_…`): 20 characters of lower-case
/// base32, the same in every store.
public enum RandomID {
    public static func make() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")
        var generator = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in alphabet[Int(generator.next() % 32)] })
    }
}
