import EchoRelayCore
import EchoRelaySQL
import Foundation
import PostgresNIO

extension PostgresEventStore: ConsoleSessionStore {
    public func createConsoleSession(keyHash: [UInt8], _ session: ConsoleSession) async throws {
        try await wrapped {
            try await client.query("""
                INSERT INTO console_sessions (key_sha256, token_id, name, role, form_token, expires_at, credential_sha256)
                VALUES (\(Data(keyHash)), \(session.principal.tokenID), \(session.principal.name),
                        \(session.principal.role.rawValue), \(session.formToken), \(session.expiresAt),
                        \(session.credentialSHA256.map { Data($0) }))
                """, logger: logger)
        }
    }

    public func consoleSession(keyHash: [UInt8]) async throws -> ConsoleSession? {
        try await rows("""
            SELECT \(unescaped: ConsoleSession.columns)
            FROM console_sessions s LEFT JOIN access_tokens t ON t.id = s.token_id
            WHERE s.key_sha256 = \(Data(keyHash)) AND s.expires_at > now()
              AND (s.token_id IS NULL OR t.revoked_at IS NULL)
            """, ConsoleSession.init(row:)).first
    }

    public func removeExpiredConsoleSessions() async throws -> Int {
        try await wrapped {
            let rows = try await client.query("""
                WITH expired AS (DELETE FROM console_sessions WHERE expires_at <= now() RETURNING 1)
                SELECT count(*)::bigint FROM expired
                """, logger: logger)
            return try await rows.decode(Int.self).gathered().first ?? 0
        }
    }

    public func deleteConsoleSession(keyHash: [UInt8]) async throws {
        try await wrapped {
            try await client.query("DELETE FROM console_sessions WHERE key_sha256 = \(Data(keyHash))", logger: logger)
        }
    }
}
