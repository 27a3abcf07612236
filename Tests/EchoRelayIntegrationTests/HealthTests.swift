import Foundation
import Testing
import TestSupport

@Suite struct HealthTests {
    @Test func healthAndReadinessAreOKOnAMigratedDatabase() async throws {
        try await LiveServer.run { server in
            #expect(try await server.http.get("/healthz").status == 200)
            let ready = try await server.http.get("/readyz")
            #expect(ready.status == 200)
            #expect(ready.json?["status"] as? String == "ready")
        }
    }

    @Test func notReadyWhileMigrationsArePending() async throws {
        try await LiveServer.run(migrate: false) { server in
            #expect(try await server.http.get("/healthz").status == 200)
            let ready = try await server.http.get("/readyz")
            #expect(ready.status == 503)
            #expect((ready.json?["reason"] as? String)?.contains("pending") == true)
        }
    }
}
