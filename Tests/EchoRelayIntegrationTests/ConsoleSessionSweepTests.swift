import Foundation
import PostgresNIO
import Testing
import TestSupport

/// A console session nobody signs out of leaves the database when it expires, not at the
/// next sign-in: a process that serves the console sweeps them.
@Suite struct ConsoleSessionSweepTests {
    @Test func anExpiredSessionIsRemovedWithoutAnyoneSigningIn() async throws {
        try await LiveServer.run(consoleSessionSweepInterval: .milliseconds(100)) { server in
            try await server.database.withClient { client in
                _ = try await client.query("""
                    INSERT INTO console_sessions (key_sha256, token_id, name, role, form_token, expires_at)
                    VALUES ('\\x01', NULL, 'expired', 'admin', 'f1', now() - interval '1 second'),
                           ('\\x02', NULL, 'live', 'admin', 'f2', now() + interval '1 hour')
                    """, logger: TestLogger.quiet)
            }
            let deadline = ContinuousClock.now + .seconds(20)
            var names: [String] = []
            repeat {
                try await Task.sleep(for: .milliseconds(100))
                names = try await server.database.withClient { client in
                    try await client.query("SELECT name FROM console_sessions ORDER BY name", logger: TestLogger.quiet)
                        .collect().map { try $0.decode(String.self) }
                }
            } while names.contains("expired") && ContinuousClock.now < deadline
            #expect(names == ["live"])
        }
    }
}
