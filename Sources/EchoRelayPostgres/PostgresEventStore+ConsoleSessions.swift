import EchoRelayCore
import Foundation
import PostgresNIO

extension PostgresEventStore: ConsoleSessionStore {
    public func createConsoleSession(keyHash: [UInt8], _ session: ConsoleSession) async throws {
        do {
            try await client.query("""
                INSERT INTO console_sessions (key_sha256, token_id, name, role, form_token, expires_at)
                VALUES (\(Data(keyHash)), \(session.principal.tokenID), \(session.principal.name),
                        \(session.principal.role.rawValue), \(session.formToken), \(session.expiresAt))
                """, logger: logger)
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func consoleSession(keyHash: [UInt8]) async throws -> ConsoleSession? {
        do {
            let rows = try await client.query("""
                SELECT \(unescaped: ConsoleSession.columns)
                FROM console_sessions s LEFT JOIN access_tokens t ON t.id = s.token_id
                WHERE s.key_sha256 = \(Data(keyHash)) AND s.expires_at > now()
                  AND (s.token_id IS NULL OR t.revoked_at IS NULL)
                """, logger: logger)
            return try await rows.storeRows().first.map(ConsoleSession.init(row:))
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func removeExpiredConsoleSessions() async throws -> Int {
        do {
            let rows = try await client.query("""
                WITH expired AS (DELETE FROM console_sessions WHERE expires_at <= now() RETURNING 1)
                SELECT count(*)::bigint FROM expired
                """, logger: logger)
            return try await rows.decode(Int.self).gathered().first ?? 0
        } catch {
            throw StoreError.wrap(error)
        }
    }

    public func deleteConsoleSession(keyHash: [UInt8]) async throws {
        do {
            try await client.query("DELETE FROM console_sessions WHERE key_sha256 = \(Data(keyHash))", logger: logger)
        } catch {
            throw StoreError.wrap(error)
        }
    }
}
