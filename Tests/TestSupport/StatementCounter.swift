import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy in front of PostgreSQL that counts the statements run through it
/// (`Tests/Tools/statement_counter.py`, a real child process reading the wire protocol): a
/// test points a server's database URL at `port` and reads `statements` before and after.
public final class StatementCounter: Sendable {
    public let port: Int
    private let child: ChildProcess
    private let countFile: String

    public init(targetPort: Int) async throws {
        let countFile = FileManager.default.temporaryDirectory.appendingPathComponent("statements-\(UUID().uuidString)").path
        (child, port) = try await PythonTool.start("statement_counter.py", [String(targetPort), countFile],
                                                   what: "the statement counter", install: "python3")
        self.countFile = countFile
    }

    /// Statements run through the proxy so far.
    public var statements: Int {
        (try? String(contentsOfFile: countFile, encoding: .utf8)).flatMap { Int($0) } ?? 0
    }

    /// Waits until no statement has run for `quiet`, and returns the count then.
    public func settled(quiet: Duration = .seconds(1), within limit: Duration = .seconds(30)) async throws -> Int {
        let deadline = ContinuousClock.now + limit
        var last = statements
        var since = ContinuousClock.now
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            let now = statements
            if now != last { last = now; since = .now } else if ContinuousClock.now - since >= quiet { return now }
        }
        throw TestSetupError("statements kept running for \(limit)")
    }

    deinit {
        child.signal(SIGKILL)
        try? FileManager.default.removeItem(atPath: countFile)
    }
}
