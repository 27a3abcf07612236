@testable import EchoRelayHTTP
import EchoRelayServer
import Foundation
import NIOHTTP1
import Synchronization
import TestSupport
import Testing

/// A console session lasts only while the credential it was opened with is accepted.
@Suite struct ConsoleCredentialTests {
    static let replacement = "replacement-admin-token-" + String(repeating: "x7", count: 12)

    /// After a leaked `ECHORELAY_ADMIN_TOKEN` is replaced, the sessions it opened end, and stay
    /// ended even if the old token is set again; a restart with the same token keeps them.
    @Test(arguments: [StoreKind.postgres, .sqlite])
    func replacingTheAdminTokenEndsTheSessionsItOpened(store: StoreKind) async throws {
        try await HardeningServer.withStore(store) { url in
            let key = Mutex<String?>(nil)
            try await HardeningServer.run(databaseURL: url) { http in
                let browser = ConsoleBrowser(port: http.port)
                let signedIn = try await browser.signIn(token: LiveServer.adminToken)
                #expect(signedIn.status == 303)
                let home = try await browser.get("/console")
                #expect(home.status == 200)
                key.withLock { $0 = browser.cookieJar[ConsoleSessions.cookieName] }
            }
            let cookie = [("Cookie", "\(ConsoleSessions.cookieName)=\(try #require(key.withLock { $0 }))")]

            try await HardeningServer.run(databaseURL: url) { http in
                let page = try await ConsoleBrowser(port: http.port).get("/console", headers: cookie)
                #expect(page.status == 200, "the same token after a restart: the session goes on")
            }
            try await HardeningServer.run(databaseURL: url, adminToken: Self.replacement) { http in
                let page = try await ConsoleBrowser(port: http.port).get("/console", headers: cookie)
                #expect(page.status == 303 && page.headers["Location"] == ["/console/sign-in"], "\(page.status)")
                let fresh = ConsoleBrowser(port: http.port)
                #expect(try await fresh.signIn(token: Self.replacement).status == 303)
                #expect(try await fresh.get("/console").status == 200, "the new token signs in")
            }
            try await HardeningServer.run(databaseURL: url) { http in
                let page = try await ConsoleBrowser(port: http.port).get("/console", headers: cookie)
                #expect(page.status == 303, "the old token set again does not bring the ended session back")
            }
            try await HardeningServer.run(databaseURL: url, adminToken: nil) { http in
                let page = try await ConsoleBrowser(port: http.port).get("/console", headers: cookie)
                #expect(page.status == 303)
            }
        }
    }
}
