/// Why an `Authorization: OAuth …` header could not be parsed.
///
/// The header carries credentials (the token, the signature), so `reason` may name a
/// parameter but never repeats any part of a value — nor text that could not be told apart
/// from one.
public struct OAuthHeaderError: Error, Equatable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

/// Why a request could not be signed or checked: its URL, its query or form body, or an
/// argument of the signing call. Like ``OAuthHeaderError``, `reason` never repeats a value.
public struct OAuthRequestError: Error, Equatable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
