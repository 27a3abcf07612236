import EchoRelayCore
import EchoRelaySQL

extension SQLiteEventStore {
    public func createConsoleSession(keyHash: [UInt8], _ newSession: ConsoleSession) async throws {
        try await session.write { db in
            try await db.run("""
                INSERT INTO console_sessions (key_sha256, token_id, name, role, form_token, created_at, expires_at, credential_sha256)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                """, [Blob(keyHash), newSession.principal.tokenID, newSession.principal.name, newSession.principal.role.rawValue,
                      newSession.formToken, db.now, newSession.expiresAt, newSession.credentialSHA256.map(Blob.init)])
        }
    }

    public func consoleSession(keyHash: [UInt8]) async throws -> ConsoleSession? {
        try await session.read { db in
            try await db.row("""
                SELECT \(ConsoleSession.columns)
                FROM console_sessions s LEFT JOIN access_tokens t ON t.id = s.token_id
                WHERE s.key_sha256 = ?1 AND s.expires_at > ?2 AND (s.token_id IS NULL OR t.revoked_at IS NULL)
                """, [Blob(keyHash), db.now]).map(ConsoleSession.init(row:))
        }
    }

    public func removeExpiredConsoleSessions() async throws -> Int {
        try await session.write { db in
            let now = db.now
            let expired = try await db.row("SELECT count(*) FROM console_sessions WHERE expires_at <= ?1", [now])?.int(0) ?? 0
            try await db.run("DELETE FROM console_sessions WHERE expires_at <= ?1", [now])
            return expired
        }
    }

    public func deleteConsoleSession(keyHash: [UInt8]) async throws {
        try await session.read { db in
            try await db.run("DELETE FROM console_sessions WHERE key_sha256 = ?1", [Blob(keyHash)])
        }
    }
}
