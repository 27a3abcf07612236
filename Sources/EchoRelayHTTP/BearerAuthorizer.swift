import Crypto
import EchoRelayCore
import Foundation
import Hummingbird
import Logging

/// Checks `Authorization: Bearer <token>` and says who is asking: the holder of
/// `ECHORELAY_ADMIN_TOKEN` (an admin), or of a stored access token with its role.
///
/// Only SHA-256 digests of tokens are held or looked up. The environment token is compared
/// digest to digest in constant time and never costs a database query; stored tokens are
/// found by their digest, and only text shaped like a token (`er_…`) is looked up at all. A
/// digest that matched nothing is refused without a lookup for a while after (`RecentMisses`).
public struct BearerAuthorizer: Sendable {
    private let adminTokenHash: SHA256.Digest?
    private let tokens: (any AccessTokenStore)?
    private let logger: Logger
    private let unknown = RecentMisses()

    /// - Parameters:
    ///   - adminToken: `ECHORELAY_ADMIN_TOKEN`, an admin that needs no database row.
    ///   - tokens: where issued tokens are looked up; nil accepts only the admin token.
    ///   - logger: where failed token lookups are logged (their texts are safe to log).
    public init(adminToken: Secret?, tokens: (any AccessTokenStore)?, logger: Logger = Logger(label: "echorelay.auth")) {
        self.adminTokenHash = adminToken.map { SHA256.hash(data: Data($0.revealed.utf8)) }
        self.tokens = tokens
        self.logger = logger
    }

    /// Who the request is from. 401 (problem+json, `WWW-Authenticate: Bearer`) unless it
    /// carries a valid, unrevoked token; 503 if the token store cannot be reached.
    func authenticate(_ request: Request) async throws(Problem) -> Principal {
        try await authenticate(token: try Self.presentedToken(request))
    }

    /// The token of `Authorization: Bearer <token>`: 401 without one.
    static func presentedToken(_ request: Request) throws(Problem) -> String {
        guard let header = request.headers[.authorization] else {
            throw .unauthorized("an Authorization: Bearer token is required")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw .unauthorized("the Authorization header must be \"Bearer <token>\"")
        }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    /// Whose token this is (the console's sign-in form presents one): 401 unless it is
    /// valid and unrevoked; 503 if the token store cannot be reached.
    func authenticate(token: String) async throws(Problem) -> Principal {
        let presented = SHA256.hash(data: Data(token.utf8))
        if let adminTokenHash, presented == adminTokenHash {
            return .environmentAdmin
        }
        guard let tokens, AccessTokenText.isWellFormed(token) else {
            throw .unauthorized("the bearer token is not valid")
        }
        let digest = Array(presented)
        if unknown.contains(digest) { throw .unauthorized("the bearer token is not valid") }
        let principal: Principal?
        do {
            principal = try await tokens.principal(forTokenHash: digest)
        } catch StoreError.unavailable(let reason) {
            logger.error("access token lookup failed", metadata: ["error": "\(reason)"])
            throw .serviceUnavailable
        } catch {
            logger.error("access token lookup failed", metadata: ["error": "\(error)"])
            throw .internalError
        }
        guard let principal else {
            unknown.record(digest)
            throw .unauthorized("the bearer token is not valid")
        }
        return principal
    }

    /// Whether a console session opened with `ECHORELAY_ADMIN_TOKEN` was opened with the token
    /// set now: a session of a replaced (or unset) token ends with it.
    func acceptsEnvironmentAdminSession(credentialSHA256: [UInt8]?) -> Bool {
        guard let adminTokenHash, let credentialSHA256 else { return false }
        return adminTokenHash == credentialSHA256
    }

    /// Who the request is from, if their role is one of `roles`: 401 as `authenticate`,
    /// and 403 (problem+json naming the roles allowed) for any other role.
    @discardableResult
    func require(_ request: Request, roles: Set<Role>) async throws -> Principal {
        let principal = try await authenticate(request)
        guard roles.contains(principal.role) else { throw Problem.forbidden(allowed: roles, actual: principal.role) }
        return principal
    }
}

extension Problem {
    /// 403: the token is valid, but its role may not do this.
    static func forbidden(allowed roles: Set<Role>, actual role: Role) -> Problem {
        let names = Role.allCases.filter(roles.contains).map(\.rawValue)
        let needed = switch names.count {
        case 0: "no role may do this"
        case 1: "this needs the \(names[0]) role"
        default: "this needs the \(names.dropLast().joined(separator: ", ")) or \(names.last!) role"
        }
        return Problem(
            .forbidden, slug: "forbidden", title: "Forbidden", detail: "\(needed); the token has the \(role.rawValue) role",
            headers: [.wwwAuthenticate: #"Bearer error="insufficient_scope""#]
        )
    }
}
