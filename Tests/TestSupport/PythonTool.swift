import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A Python program of `Tests/Tools` that plays the other side of a protocol on loopback: it
/// is started as a real child process and prints the port it listens on as its first line.
public enum PythonTool {
    /// Starts `script` (a file name in `Tests/Tools`) with `arguments`, and waits up to 15 s
    /// for its port. `what` names it, and `install` what it needs, in the error if it does not start.
    public static func start(_ script: String, _ arguments: [String], what: String, install: String) async throws -> (ChildProcess, Int) {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Tools/\(script)").standardized.path
        let child = try ChildProcess(["python3", path] + arguments, executable: URL(fileURLWithPath: "/usr/bin/env"))
        let deadline = ContinuousClock.now + .seconds(15)
        while true {
            if let line = child.standardOutput.split(separator: "\n").first, let port = Int(line) { return (child, port) }
            guard child.isRunning, ContinuousClock.now < deadline else {
                child.signal(SIGKILL)
                throw TestSetupError("\(what) did not start (is \(install) installed? scripts/test installs it): \(child.standardError)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
