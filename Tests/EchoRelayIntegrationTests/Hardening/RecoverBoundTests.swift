import EchoRelayCore
import EchoRelayServer
import Foundation
import NIOHTTP1
import TestSupport
import Testing

/// A recover sends only what its subscription could have had: an app token's window starts at
/// the subscription's creation at the earliest, so a new subscription cannot pull every user's
/// history; staff can reach back, by asking explicitly, and the audit log says they did.
@Suite struct RecoverBoundTests {
    @Test func anAppCannotRecoverFromBeforeItsSubscriptionAndStaffMayOnlyByAskingAudited() async throws {
        try await EchoFixture.run { f in
            let session = try f.session("history-1", phone: "+15550001111")
            #expect(try await f.pushVerified("phone.changed", userID: "history-1", phone: "+15550001111", session: session)["status"] as? String == "verified")

            let app = try await SubscriptionsAPITests.token("app", "newcomer", f.server)
            let subscription = try await f.subscribe(url: "https://hooks.example.com/newcomer", types: ["phone.changed"], token: app)
            let id = try #require(subscription["id"] as? String)
            func recover(_ token: String, _ body: [String: Any]) async throws -> TestHTTPResponse {
                try await f.server.http.send(.POST, "/v1/subscriptions/\(id)/recover", headers: [
                    ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"),
                ], body: Array(try JSONSerialization.data(withJSONObject: body)))
            }
            func fields(_ response: TestHTTPResponse) -> [String] {
                (response.json?["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
            }
            let ninetyDaysAgo = RFC3339.format(Date().addingTimeInterval(-90 * 86_400))

            let early = try await recover(app, ["since": ninetyDaysAgo, "dry_run": true])
            #expect(early.status == 200 && early.json?["matched"] as? Int == 0, "nothing from before its creation: \(early.text)")
            let started = try await recover(app, ["since": ninetyDaysAgo])
            #expect(started.status == 422 && started.json?["type"] as? String == "urn:echorelay:problem:nothing-to-recover", "\(started.text)")
            let asking = try await recover(app, ["since": ninetyDaysAgo, "before_creation": true, "dry_run": true])
            #expect(asking.status == 422 && fields(asking) == ["before_creation"], "\(asking.text)")

            // What arrived after the creation, while it was disabled, is the app's to recover.
            #expect(try await recover(app, ["reason": "x"]).status == 422, "since is still required")
            let disabled = try await f.server.http.send(.POST, "/v1/subscriptions/\(id)/disable", headers: [("Authorization", "Bearer \(app)")])
            #expect(disabled.status == 200)
            #expect(try await f.pushVerified("phone.changed", userID: "history-1", phone: "+15550001111", session: session)["status"] as? String == "verified")
            #expect(try await recover(app, ["since": ninetyDaysAgo, "dry_run": true]).json?["matched"] as? Int == 1)

            // Staff: without asking, the window starts at the creation; asking reaches back.
            #expect(try await recover(LiveServer.adminToken, ["since": ninetyDaysAgo, "dry_run": true]).json?["matched"] as? Int == 1)
            #expect(try await recover(LiveServer.adminToken, ["since": ninetyDaysAgo, "dry_run": true, "before_creation": true])
                .json?["matched"] as? Int == 2)
            let reached = try await recover(LiveServer.adminToken, ["since": ninetyDaysAgo, "before_creation": true, "reason": "migrated backend"])
            #expect(reached.status == 202, "\(reached.text)")
            #expect((reached.json?["filter"] as? [String: Any])?["before_creation"] as? Bool == true)

            let entries = try await f.server.http.get("/v1/audit?action=subscription.recover", bearer: LiveServer.adminToken)
                .json?["entries"] as? [[String: Any]] ?? []
            #expect(entries.count == 1)
            #expect((entries.first?["filter"] as? [String: Any])?["before_creation"] as? Bool == true, "\(entries)")
            #expect(entries.first?["reason"] as? String == "migrated backend")
        }
    }
}
