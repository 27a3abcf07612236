import EchoRelayCore
import EchoRelaySQL
import Foundation
import PostgresNIO

extension PostgresEventStore: AccessTokenStore {
    public func createAccessToken(name: String, role: Role) async throws -> (record: AccessTokenRecord, token: Secret) {
        try AccessTokenName.validate(name)
        // 256 random bits for the token and 80 for the id: a collision is not expected, but
        // the unique constraints would catch one, and a second draw settles it.
        for attempt in 1...3 {
            let token = AccessTokenText.generate()
            let id = AccessTokenText.newID()
            do {
                let rows = try await client.query("""
                    INSERT INTO access_tokens (id, name, role, token_sha256)
                    VALUES (\(id), \(name), \(role.rawValue), \(Data(AccessTokenText.hash(token))))
                    RETURNING created_at
                    """, logger: logger)
                for try await createdAt in rows.decode(Date.self) {
                    logger.info("access token created", metadata: ["token.id": "\(id)", "token.role": "\(role.rawValue)"])
                    return (AccessTokenRecord(id: id, name: name, role: role, createdAt: createdAt), Secret(token))
                }
                throw StoreError.unexpected("creating an access token returned no row")
            } catch let error as PSQLError where attempt < 3
                && (error.isUniqueViolation(constraint: "access_tokens_pkey")
                    || error.isUniqueViolation(constraint: "access_tokens_token_sha256_key")) {
                continue
            } catch {
                throw StoreError.wrap(error)
            }
        }
        throw StoreError.unexpected("could not draw a unique access token")
    }

    public func accessTokens() async throws -> [AccessTokenRecord] {
        try await rows("""
            SELECT \(unescaped: AccessTokenRecord.columns) FROM access_tokens ORDER BY created_at, id
            """, AccessTokenRecord.init(row:))
    }

    public func revokeAccessToken(id: String) async throws -> Bool {
        try await wrapped {
            let rows = try await client.query("""
                UPDATE access_tokens SET revoked_at = now() WHERE id = \(id) AND revoked_at IS NULL RETURNING id
                """, logger: logger)
            let revoked = try await rows.collect().count == 1
            if revoked { logger.info("access token revoked", metadata: ["token.id": "\(id)"]) }
            return revoked
        }
    }

    public func principal(forTokenHash hash: [UInt8]) async throws -> Principal? {
        try await wrapped {
            // An index lookup on the hash: timing reveals nothing an attacker can steer,
            // since they cannot choose what a token hashes to.
            let rows = try await client.query("""
                SELECT id, name, role FROM access_tokens WHERE token_sha256 = \(Data(hash)) AND revoked_at IS NULL
                """, logger: logger)
            for try await (id, name, role) in rows.decode((String, String, String).self) {
                guard let role = Role(rawValue: role) else { throw StoreError.unexpected("access token \(id) has an unknown role") }
                return Principal(tokenID: id, name: name, role: role)
            }
            return nil
        }
    }
}
