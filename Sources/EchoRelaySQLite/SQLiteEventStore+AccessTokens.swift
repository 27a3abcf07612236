import EchoRelayCore
import EchoRelaySQL
import Foundation
import Logging

extension SQLiteEventStore {
    public func createAccessToken(name: String, role: Role) async throws -> (record: AccessTokenRecord, token: Secret) {
        try AccessTokenName.validate(name)
        // 256 random bits for the token and 80 for the id: a collision is not expected, but
        // the unique constraints would catch one (the insert does nothing), and a second draw
        // settles it.
        for _ in 1...3 {
            let token = AccessTokenText.generate()
            let id = AccessTokenText.newID()
            let createdAt: Date? = try await session.read { db in
                try await db.row("""
                    INSERT INTO access_tokens (id, name, role, token_sha256, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
                    ON CONFLICT DO NOTHING
                    RETURNING created_at
                    """, [id, name, role.rawValue, Blob(AccessTokenText.hash(token)), db.now])?.date(0)
            }
            if let createdAt {
                logger.info("access token created", metadata: ["token.id": "\(id)", "token.role": "\(role.rawValue)"])
                return (AccessTokenRecord(id: id, name: name, role: role, createdAt: createdAt), Secret(token))
            }
        }
        throw StoreError.unexpected("could not draw a unique access token")
    }

    public func accessTokens() async throws -> [AccessTokenRecord] {
        try await session.read { db in
            try await db.rows("SELECT \(AccessTokenRecord.columns) FROM access_tokens ORDER BY created_at, id")
                .map(AccessTokenRecord.init(row:))
        }
    }

    public func revokeAccessToken(id: String) async throws -> Bool {
        let revoked = try await session.read { db in
            try await db.rows(
                "UPDATE access_tokens SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL RETURNING id", [db.now, id]
            ).count == 1
        }
        if revoked { logger.info("access token revoked", metadata: ["token.id": "\(id)"]) }
        return revoked
    }

    public func principal(forTokenHash hash: [UInt8]) async throws -> Principal? {
        try await session.read { db in
            // An index lookup on the hash: timing reveals nothing an attacker can steer,
            // since they cannot choose what a token hashes to.
            guard let row = try await db.row(
                "SELECT id, name, role FROM access_tokens WHERE token_sha256 = ?1 AND revoked_at IS NULL", [Blob(hash)]
            ) else { return nil }
            let id = try row.string(0)
            guard let role = Role(rawValue: try row.string(2)) else {
                throw StoreError.unexpected("access token \(id) has an unknown role")
            }
            return Principal(tokenID: id, name: try row.string(1), role: role)
        }
    }
}
