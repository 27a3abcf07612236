import Crypto
import Foundation

/// What a bearer token may do. `admin` may do everything; `support` reads events and users
/// and runs replays; `app` manages its own subscriptions.
public enum Role: String, Sendable, Codable, CaseIterable {
    case admin, support, app
}

extension Set<Role> {
    /// Support staff: who reads events and users and takes support actions.
    public static var staff: Set<Role> { [.admin, .support] }
}

/// Who made a request: the access token it carried, by id and name, and that token's role.
public struct Principal: Sendable, Equatable {
    /// The `tok_…` id, or nil for `ECHORELAY_ADMIN_TOKEN`, which has no row.
    public let tokenID: String?
    public let name: String
    public let role: Role

    public init(tokenID: String?, name: String, role: Role) {
        self.tokenID = tokenID
        self.name = name
        self.role = role
    }

    /// The principal of `ECHORELAY_ADMIN_TOKEN`.
    public static let environmentAdmin = Principal(tokenID: nil, name: "ECHORELAY_ADMIN_TOKEN", role: .admin)
}

/// An access token as stored and listed. Only a SHA-256 of the token itself is kept, so a
/// record never carries the token.
public struct AccessTokenRecord: Sendable, Equatable {
    public let id: String
    public let name: String
    public let role: Role
    public let createdAt: Date
    public let revokedAt: Date?

    public init(id: String, name: String, role: Role, createdAt: Date, revokedAt: Date? = nil) {
        self.id = id
        self.name = name
        self.role = role
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    public var isRevoked: Bool { revokedAt != nil }
}

extension AccessTokenRecord {
    public init(row: some StoreRow) throws {
        let id = try row.string(0)
        self.init(id: id, name: try row.string(1), role: try row.value(2, "role of access token \(id)"), createdAt: try row.date(3),
                  revokedAt: try row.optionalDate(4))
    }
}

/// Where access tokens live. Every method is one atomic step.
public protocol AccessTokenStore: Sendable {
    /// Stores a new token of `role`, keeping only its hash, and returns the token itself:
    /// this is the only time it exists outside the caller's hands. Throws
    /// `AccessTokenNameError` for a name that `AccessTokenName.validate` refuses.
    func createAccessToken(name: String, role: Role) async throws -> (record: AccessTokenRecord, token: Secret)

    /// Every token, revoked ones included, oldest first.
    func accessTokens() async throws -> [AccessTokenRecord]

    /// Revokes the token at once. False if the id is unknown or the token was already revoked.
    func revokeAccessToken(id: String) async throws -> Bool

    /// The owner of the token with this SHA-256, or nil if it is unknown or revoked.
    func principal(forTokenHash hash: [UInt8]) async throws -> Principal?
}

/// The text of access tokens: `er_` and 43 characters of base64url, 256 random bits.
/// The prefix lets secret scanners find leaked tokens and lets the server refuse
/// anything else without a database lookup.
public enum AccessTokenText {
    public static let prefix = "er_"
    /// 32 bytes in unpadded base64url.
    static let bodyLength = 43

    public static func generate() -> String {
        prefix + randomBody()
    }

    /// A token's id: `tok_` and 20 lowercase hex digits (80 random bits).
    public static func newID() -> String {
        "tok_" + SymmetricKey(size: SymmetricKeySize(bitCount: 80)).withUnsafeBytes { bytes in
            bytes.lowercaseHex
        }
    }

    /// 256 random bits in unpadded base64url (43 characters): a token's body, and the
    /// support console's session keys and form tokens.
    public static func randomBody() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The SHA-256 of the token's UTF-8 text: what is stored and looked up.
    public static func hash(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(token.utf8)))
    }

    /// Whether `token` has the shape `generate()` gives; only such tokens can be stored.
    public static func isWellFormed(_ token: String) -> Bool {
        guard token.hasPrefix(prefix) else { return false }
        let body = token.utf8.dropFirst(prefix.utf8.count)
        return body.count == bodyLength && body.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }
}

/// The rule for token names: they appear in listings and logs, so they are short and printable.
public enum AccessTokenName {
    public static let maximumLength = 100

    /// Accepts 1–100 printable characters that neither start nor end with whitespace.
    public static func validate(_ name: String) throws(AccessTokenNameError) {
        guard !name.isEmpty else { throw AccessTokenNameError("must not be empty") }
        // Counted in code points, as JSON Schema's maxLength counts them.
        guard name.unicodeScalars.count <= maximumLength else {
            throw AccessTokenNameError("must be at most \(maximumLength) characters, got \(name.unicodeScalars.count)")
        }
        guard name.unicodeScalars.allSatisfy(isPrintable) else {
            throw AccessTokenNameError("must be printable: no control characters, tabs or line breaks")
        }
        guard let first = name.first, let last = name.last, !first.isWhitespace, !last.isWhitespace else {
            throw AccessTokenNameError("must not start or end with a space")
        }
    }

    private static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator:
            false
        case .spaceSeparator:
            scalar == " "
        default:
            true
        }
    }
}

public struct AccessTokenNameError: Error, Equatable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { "a token name \(reason)" }
}
