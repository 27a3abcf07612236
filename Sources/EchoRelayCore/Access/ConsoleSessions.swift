import Foundation

/// A support console sign-in. The browser holds a random session key in a cookie; the store
/// keeps only the key's SHA-256, so a copy of the database signs nobody in.
public struct ConsoleSession: Sendable, Equatable {
    /// Who signed in: the access token's owner, or `ECHORELAY_ADMIN_TOKEN`'s.
    public var principal: Principal
    /// The token every form that changes something carries (CSRF): random per session and
    /// sent only inside the pages of that session.
    public var formToken: String
    public var expiresAt: Date
    /// The SHA-256 of the token the session was opened with: a session of
    /// `ECHORELAY_ADMIN_TOKEN` lasts only while that same token is the one set. Nil for
    /// sessions opened before it was recorded.
    public var credentialSHA256: [UInt8]?

    public init(principal: Principal, formToken: String, expiresAt: Date, credentialSHA256: [UInt8]? = nil) {
        self.principal = principal
        self.formToken = formToken
        self.expiresAt = expiresAt
        self.credentialSHA256 = credentialSHA256
    }
}

extension ConsoleSession {
    public init(row: some StoreRow) throws {
        self.init(principal: Principal(tokenID: try row.optionalString(0), name: try row.string(1),
                                       role: try row.value(2, "role of a console session")),
                  formToken: try row.string(3), expiresAt: try row.date(4), credentialSHA256: try row.optionalBytes(5))
    }
}

/// Where console sessions live: in the database, so that every `serve` process knows every
/// sign-in and revoking an access token ends its sessions at once.
public protocol ConsoleSessionStore: Sendable {
    /// Stores a session under the SHA-256 of its key. (Expired ones are swept apart:
    /// `removeExpiredConsoleSessions`.)
    func createConsoleSession(keyHash: [UInt8], _ session: ConsoleSession) async throws

    /// The session with this key hash, or nil if it is unknown, expired, or its access token
    /// was revoked since.
    func consoleSession(keyHash: [UInt8]) async throws -> ConsoleSession?

    /// Ends the session (signing out). Nothing happens for an unknown key.
    func deleteConsoleSession(keyHash: [UInt8]) async throws

    /// Deletes every session that has expired; returns how many.
    func removeExpiredConsoleSessions() async throws -> Int
}
