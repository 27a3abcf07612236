import EchoRelayCore
import EchoRelayStandIns
import Foundation
import TestSupport
import Testing

/// The console in a real browser: Debian's headless Chromium, driven through chromedriver by
/// `Tests/Browser/console_flow.py` (Selenium), against a live server with a verified event
/// delivered to a stand-in subscriber. A support person signs in, searches the user, opens
/// the event, replays it with a reason and confirms; the test then checks the replay where it
/// matters: the page, the audit log (read in the browser by an admin and through the API), and
/// the subscriber, which receives it signed and marked as a replay.
///
/// The screenshots go to `ECHORELAY_CONSOLE_SCREENSHOTS` when set (the README's picture of the
/// timeline comes from there), else to a folder removed afterwards.
@Suite struct ConsoleBrowserTests {
    @Test func aSupportPersonGoesFromAUserIDToAReplayedEventInABrowser() async throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw TestSetupError("\(tool) is missing: scripts/test installs it (apt-get install chromium chromium-driver)")
        }
        let keep = ProcessInfo.processInfo.environment["ECHORELAY_CONSOLE_SCREENSHOTS"]
        let shots = keep.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-console-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        defer { if keep == nil { try? FileManager.default.removeItem(at: shots) } }

        try await EchoFixture.run { f in
            try await StandInSubscriber().run { subscriber in
                let subscription = try await f.subscribe(url: subscriber.url())
                subscriber.setSecrets([try #require(subscription["secret"] as? String)])
                let userID = "u-4711"
                let session = try f.session(userID, phone: "+15550104711")
                try await f.pushVerified("token.rotated", userID: userID, session: session)
                let event = try await f.pushVerified("phone.changed", userID: userID, phone: "+15550104711", session: session)
                let eventID = try #require(event["id"] as? String)
                try await subscriber.waitForDeliveries(count: 2, within: .seconds(20))
                try await SupportAPITests.waitUntilRecorded(f.server, count: 2)
                let support = try await SubscriptionsAPITests.token("support", "Robin from support", f.server)
                let reason = "customer says the app kept the old phone number"

                let run = try Spawned(
                    "/usr/bin/env",
                    ["python3", OpenAPITests.root.appendingPathComponent("Tests/Browser/console_flow.py").path,
                     f.server.http.baseURL, support, LiveServer.adminToken, userID, eventID, reason, shots.path]
                )
                do {
                    _ = try await run.wait(timeout: .seconds(120))
                } catch {
                    throw TestSetupError("the browser did not finish within 120 s: \(String(decoding: run.standardError, as: UTF8.self))")
                }
                let errors = String(decoding: run.standardError, as: UTF8.self)
                if run.status == 1, errors.contains("ModuleNotFoundError") {
                    throw TestSetupError("selenium is missing: run `scripts/test` (it installs scripts/python-requirements.txt into .build/venv, first on PATH)")
                }
                try #require(run.status == 0, "the browser flow failed: \(errors)")
                let seen = try #require(try JSONSerialization.jsonObject(with: run.standardOutput) as? [String: Any])
                print("console browser flow: \(seen)")

                #expect(seen["timeline_lists_event"] as? Bool == true)
                #expect(seen["timeline_badge"] as? String == "verified")
                #expect(seen["confirmation"] as? String == "Replay event \(eventID)?")
                let replayID = try #require(seen["replay_id"] as? String)
                #expect(seen["event_page_shows_replay"] as? Bool == true, "the replay is on the event page")
                #expect(seen["scripts_in_pages"] as? Int == 0)
                let auditRow = try #require(seen["audit_row"] as? String, "the admin finds the replay in the audit log")
                #expect(auditRow.contains("Robin from support") && auditRow.contains(reason) && auditRow.contains(eventID))
                let cookies = seen["cookies"] as? [[String: Any]] ?? []
                #expect(cookies.contains { $0["name"] as? String == "echorelay_console" && $0["httpOnly"] as? Bool == true
                    && $0["sameSite"] as? String == "Strict" })

                // The replay reached the subscriber, signed, with the same webhook-id, marked as a replay.
                let deliveries = try await subscriber.waitForDeliveries(count: 3, within: .seconds(20))
                let replayed = try #require(deliveries.last)
                #expect(replayed.signatureValid)
                #expect(replayed.object?["event_id"] == .string(eventID))
                #expect(replayed.object?["replay"]?.objectValue?["id"] == .string(replayID))
                #expect(replayed.webhookID == deliveries[1].webhookID)
                #expect(try await ConsoleTests.auditActions(f) == ["event.replay by Robin from support: \(reason)"])
                #expect(FileManager.default.fileExists(atPath: shots.appendingPathComponent("console-timeline.png").path))
            }
        }
    }
}
