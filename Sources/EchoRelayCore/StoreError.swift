/// Store failures the HTTP layer turns into answers: `unavailable` is a 503 (try again),
/// `unexpected` a 500. Their texts are safe to log and never carry row data.
public enum StoreError: Error, CustomStringConvertible {
    case unavailable(String)
    case unexpected(String)

    public var description: String {
        switch self {
        case .unavailable(let reason): "the database is unavailable: \(reason)"
        case .unexpected(let reason): "unexpected database error: \(reason)"
        }
    }
}
