import EchoRelayServer
import Foundation
import NIOHTTP1
import Synchronization
import TestSupport
import Testing

/// A subscription change and its audit entry commit together: with the audit log made to
/// refuse rows, every change is refused and nothing of it stays; with it back, each change
/// has its entry.
@Suite struct AuditTransactionTests {
    static let admin = [("Authorization", "Bearer \(LiveServer.adminToken)"), ("Content-Type", "application/json")]

    static func send(_ http: HTTPTestClient, _ method: HTTPMethod, _ path: String, _ body: [String: Any]? = nil) async throws -> TestHTTPResponse {
        try await http.send(method, path, headers: admin, body: try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) })
    }

    /// A trigger that makes every insert into the audit log fail, written beside serve.
    static func refuseAuditEntries(_ url: String) async throws {
        let child: Spawned
        if url.hasPrefix("sqlite:") {
            child = try Spawned("/usr/bin/env", ["python3", "-c", """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1])
                db.execute("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit refused'); END")
                db.commit()
                """, String(url.dropFirst("sqlite:".count))])
        } else {
            child = try Spawned("/usr/bin/env", ["psql", "-X", "-v", "ON_ERROR_STOP=1", url, "-c", """
                CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$;
                CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit();
                """])
        }
        let status = try await child.wait()
        guard status == 0 else { throw TestSetupError("making the audit log refuse rows failed: \(String(decoding: child.standardError, as: UTF8.self))") }
    }

    @Test(arguments: [StoreKind.postgres, .sqlite])
    func aChangeWhoseAuditEntryCannotBeWrittenIsNotMade(store: StoreKind) async throws {
        try await HardeningServer.withStore(store) { url in
            let id = Mutex<String?>(nil)
            try await HardeningServer.run(databaseURL: url) { http in
                let created = try await Self.send(http, .POST, "/v1/subscriptions",
                                                  ["url": "https://hooks.example.com/a", "event_types": ["token.rotated"]])
                #expect(created.status == 201)
                let createdID = try #require(created.json?["id"] as? String)
                id.withLock { $0 = createdID }
            }
            let subscription = try #require(id.withLock { $0 })
            try await Self.refuseAuditEntries(url)

            try await HardeningServer.run(databaseURL: url) { http in
                let changes: [(HTTPMethod, String, [String: Any]?)] = [
                    (.POST, "/v1/subscriptions", ["url": "https://hooks.example.com/b", "event_types": ["token.rotated"]]),
                    (.PATCH, "/v1/subscriptions/\(subscription)", ["description": "changed"]),
                    (.POST, "/v1/subscriptions/\(subscription)/disable", nil),
                    (.POST, "/v1/subscriptions/\(subscription)/rotate-secret", nil),
                    (.DELETE, "/v1/subscriptions/\(subscription)", nil),
                ]
                for (method, path, body) in changes {
                    let answer = try await Self.send(http, method, path, body)
                    #expect(answer.status >= 500, "\(method) \(path) was answered \(answer.status) without its audit entry")
                }
                let list = try await Self.send(http, .GET, "/v1/subscriptions").json?["subscriptions"] as? [[String: Any]] ?? []
                #expect(list.count == 1, "the refused create left nothing")
                let kept = try await Self.send(http, .GET, "/v1/subscriptions/\(subscription)")
                #expect(kept.status == 200, "the refused delete left it")
                #expect(kept.json?["description"] is NSNull || kept.json?["description"] == nil, "the refused update changed nothing")
                #expect(kept.json?["enabled"] as? Bool == true, "the refused disable changed nothing")
                let audit = try await Self.send(http, .GET, "/v1/audit").json?["entries"] as? [[String: Any]] ?? []
                #expect(audit.compactMap { $0["action"] as? String } == ["subscription.create"], "\(audit)")
            }
        }
    }
}
