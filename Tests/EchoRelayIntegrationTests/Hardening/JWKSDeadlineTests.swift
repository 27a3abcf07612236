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
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Tools/stalling_http.py").standardized.path
        let server = try ChildProcess(["python3", script], executable: URL(fileURLWithPath: "/usr/bin/env"))
        defer { server.signal(SIGKILL) }
        var port: Int?
        for _ in 0..<100 where port == nil {
            port = server.standardOutput.split(separator: "\n").first.flatMap { Int($0) }
            if port == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let fetch = JWKSFetch.from("http://127.0.0.1:\(try #require(port))/jwks.json", within: .seconds(1))
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
