@testable import EchoRelayHTTP
import Foundation
import NIOHTTP1
import TestSupport
import Testing

/// A method a known path does not take is `405` with `Allow`; an unknown path stays `404`.
@Suite struct MethodNotAllowedTests {
    @Test func anUndeclaredMethodOnAKnownPathIs405WithAllow() async throws {
        try await HardeningServer.withStore(.sqlite) { url in
            try await HardeningServer.run(databaseURL: url) { http in
                let admin = [("Authorization", "Bearer \(LiveServer.adminToken)")]
                for (method, path, allow) in [(HTTPMethod.DELETE, "/v1/events", "POST, GET"),
                                              (.PUT, "/v1/subscriptions/sub_x", "GET, PATCH, DELETE"),
                                              (.GET, "/v1/subscriptions/sub_x/recover", "POST"),
                                              (.POST, "/healthz", "GET")] {
                    let answer = try await http.send(method, path, headers: admin)
                    #expect(answer.status == 405, "\(method) \(path): \(answer.status)")
                    #expect(answer.headers["Allow"] == [allow], "\(method) \(path): \(answer.headers["Allow"])")
                    #expect(answer.json?["type"] as? String == "urn:echorelay:problem:method-not-allowed")
                }
                let unknown = try await http.send(.GET, "/v1/nothing-here", headers: admin)
                #expect(unknown.status == 404)
                let missing = try await http.send(.GET, "/v1/subscriptions/sub_missing", headers: admin)
                #expect(missing.status == 404, "a known path with an unknown id is still not found")
            }
        }
    }

    @Test func theDocumentsPathsAreReadWithTheirMethods() {
        let paths = DocumentedPaths(document: OpenAPIController<EchoRelayRequestContext>.document)
        #expect(paths.methods(for: "/v1/subscriptions") == ["POST", "GET"])
        #expect(paths.methods(for: "/v1/replays/rpl_1/cancel") == ["POST"])
        #expect(paths.methods(for: "/v1/nothing").isEmpty)
    }
}
