import EchoRelaySharedSignals
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The JWKS fetch's deadline covers the body: a host that sends its head and then stalls is
/// given up on at the deadline, not held for as long as it keeps the connection open.
@Suite struct JWKSDeadlineTests {
    @Test func aJWKSBodyThatStallsTimesOut() async throws {
        let (server, port) = try await PythonTool.start("stalling_http.py", [], what: "the stalling HTTP server", install: "python3")
        defer { server.signal(SIGKILL) }
        let fetch = JWKSFetch.from("http://127.0.0.1:\(port)/jwks.json", within: .seconds(1))
        let started = ContinuousClock.now
        do {
            _ = try await fetch()
            Issue.record("a stalled body was taken as keys")
        } catch let error as JWKSFetchError {
            #expect(error.description.contains("did not send its whole answer"), "\(error)")
        }
        #expect(ContinuousClock.now - started < .seconds(30), "given up on at the deadline, not held by the host")
    }
}
