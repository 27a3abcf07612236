import Crypto
import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Checks `Authorization: Bearer <token>` against the admin token. Only a SHA-256 of the
/// token is held, and digests compare in constant time.
public struct BearerAuthorizer: Sendable {
    private let adminTokenHash: SHA256.Digest?

    public init(adminToken: Secret?) {
        self.adminTokenHash = adminToken.map { SHA256.hash(data: Data($0.revealed.utf8)) }
    }

    /// Throws 401 unless the request carries the admin token.
    func requireAdmin(_ request: Request) throws(Problem) {
        guard let header = request.headers[.authorization] else {
            throw .unauthorized("an Authorization: Bearer token is required")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw .unauthorized("the Authorization header must be \"Bearer <token>\"")
        }
        let presented = SHA256.hash(data: Data(parts[1].trimmingCharacters(in: .whitespaces).utf8))
        guard let adminTokenHash, presented == adminTokenHash else {
            throw .unauthorized("the bearer token is not valid")
        }
    }
}
