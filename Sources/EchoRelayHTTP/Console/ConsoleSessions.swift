import Crypto
import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird

/// Who is signed in to the console. Signing in presents a `support` or `admin` access token
/// once; the browser then holds only a random session key in an `HttpOnly`, `SameSite=Strict`
/// cookie scoped to `/console` (`Secure` when the request came over TLS), and the database
/// holds only the key's SHA-256 with who signed in, the session's CSRF token and the SHA-256
/// of the token it was opened with. A session lasts only while that token is accepted.
struct ConsoleSessions: Sendable {
    static let cookieName = "echorelay_console"
    /// A short-lived cookie that pairs the sign-in form with its POST (login CSRF).
    static let signInCookieName = "echorelay_console_signin"
    static let lifetime: TimeInterval = 8 * 3600

    let store: any ConsoleSessionStore
    let authorizer: BearerAuthorizer
    let now: @Sendable () -> Date
    /// Keys that matched no session, refused for a while without a lookup.
    private let unknown = RecentMisses()

    /// The request's session, or nil when it has none, or an unknown, expired or revoked one.
    func current(_ request: Request) async throws -> ConsoleSession? {
        guard let key = request.cookies[Self.cookieName]?.value, !key.isEmpty else { return nil }
        let keyHash = AccessTokenText.hash(key)
        guard !unknown.contains(keyHash) else { return nil }
        guard let session = try await store.consoleSession(keyHash: keyHash) else {
            unknown.record(keyHash)
            return nil
        }
        // A stored token's session ends with its revocation (the store's lookup); one of
        // ECHORELAY_ADMIN_TOKEN ends when the variable is changed or unset, and for good:
        // setting the old token again does not bring it back.
        if session.principal.tokenID == nil && !authorizer.acceptsEnvironmentAdminSession(credentialSHA256: session.credentialSHA256) {
            try await store.deleteConsoleSession(keyHash: keyHash)
            return nil
        }
        return session
    }

    /// Opens a session for `principal`, who presented `token`, and returns it with the cookie
    /// that carries its key.
    func open(for principal: Principal, token: String, secure: Bool) async throws -> (ConsoleSession, Cookie) {
        let key = AccessTokenText.randomBody()
        let session = ConsoleSession(principal: principal, formToken: AccessTokenText.randomBody(),
                                     expiresAt: now().addingTimeInterval(Self.lifetime),
                                     credentialSHA256: Array(SHA256.hash(data: Data(token.utf8))))
        try await store.createConsoleSession(keyHash: AccessTokenText.hash(key), session)
        let cookie = Cookie(name: Self.cookieName, value: key, maxAge: Int(Self.lifetime), path: "/console",
                            secure: secure, httpOnly: true, sameSite: .strict)
        return (session, cookie)
    }

    /// Ends the request's session, if any, and returns the cookie that clears it.
    func close(_ request: Request) async throws -> Cookie {
        if let key = request.cookies[Self.cookieName]?.value, !key.isEmpty {
            try await store.deleteConsoleSession(keyHash: AccessTokenText.hash(key))
        }
        return Self.expired(Self.cookieName, secure: Self.isSecure(request))
    }

    static func expired(_ name: String, secure: Bool) -> Cookie {
        Cookie(name: name, value: "", maxAge: 0, path: "/console", secure: secure, httpOnly: true, sameSite: .strict)
    }

    /// Whether a form's CSRF token is the expected one. Digests are compared, and swift-crypto
    /// compares digests in constant time, so the time says nothing about where they differ.
    static func tokensMatch(_ presented: String?, _ expected: String) -> Bool {
        guard let presented, !expected.isEmpty else { return false }
        return SHA256.hash(data: Data(presented.utf8)) == SHA256.hash(data: Data(expected.utf8))
    }

    /// Whether the browser reached us over TLS: directly, or through a proxy that says so.
    /// Used only to add `Secure` to cookies, so a forged header makes a cookie stricter, never looser.
    static func isSecure(_ request: Request) -> Bool {
        if request.uri.scheme == .https { return true }
        if let proto = request.headers[HTTPField.Name("X-Forwarded-Proto")!], proto.lowercased().hasPrefix("https") { return true }
        if let forwarded = request.headers[HTTPField.Name("Forwarded")!], forwarded.lowercased().contains("proto=https") { return true }
        return false
    }
}
