import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on loopback in front of a server (`Tests/Tools/stall_proxy.py`, a real child
/// process) whose open connections can be made to go silent: their sockets stay open and
/// nothing passes either way, as with a frozen host or a network path that drops packets.
/// Connections made afterwards pass normally.
public final class StallProxy: Sendable {
    public let port: Int
    private let child: ChildProcess

    public init(targetPort: Int) async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Tools/stall_proxy.py").standardized.path
        child = try ChildProcess(["python3", script, String(targetPort)], executable: URL(fileURLWithPath: "/usr/bin/env"))
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            if let line = child.standardOutput.split(separator: "\n").first, let port = Int(line) {
                self.port = port
                return
            }
            guard child.isRunning, ContinuousClock.now < deadline else {
                child.signal(SIGKILL)
                throw TestSetupError("the stall proxy did not start: \(child.standardError)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Every connection open now stops passing anything, without closing.
    public func silenceOpenConnections() async throws {
        child.signal(SIGUSR1)
        try await Task.sleep(for: .milliseconds(100))  // the signal is handled on the proxy's loop
    }

    deinit {
        child.signal(SIGKILL)
    }
}
