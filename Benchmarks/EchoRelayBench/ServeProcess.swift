import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A release `echorelay serve` as a child process, its log in a file (a pipe read by this
/// process would cost the measurement CPU), measured from outside: readiness, peak memory.
struct ServeProcess {
    let child: Spawned
    let port: Int
    let logPath: String
    var url: String { "http://127.0.0.1:\(port)" }

    static func start(binary: String, environment: [String: String], logPath: String) async throws -> ServeProcess {
        let port = try freeLoopbackPort()
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ECHORELAY_") }
        env.merge(environment) { _, new in new }
        env["ECHORELAY_HOST"] = "127.0.0.1"
        env["ECHORELAY_PORT"] = String(port)
        // exec: the pid is serve's own, so /proc/<pid> and signals reach it.
        let child = try Spawned("/bin/sh", ["-c", #"exec "$0" serve >"$1" 2>&1"#, binary, logPath], environment: env)
        let serve = ServeProcess(child: child, port: port, logPath: logPath)
        try await serve.waitUntilReady()
        return serve
    }

    private func waitUntilReady() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            guard child.isRunning else {
                throw BenchError("echorelay serve exited at start; its log: \(logPath)")
            }
            if let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: url + "/readyz"), timeout: .seconds(2)),
               response.status == .ok {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchError("echorelay serve was not ready within 60 s; its log: \(logPath)")
    }

    /// The most resident memory the process has had so far (VmHWM), in bytes.
    func peakResidentBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            return kilobytes.map { $0 * 1024 }
        }
        return nil
    }

    /// Total CPU time the process has used (user + system), from /proc/<pid>/stat.
    func cpuSeconds() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(child.pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3, utime 14 and stime 15 (1-based, whole line).
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() async throws {
        child.signal(SIGTERM)
        _ = try await child.wait(timeout: .seconds(30))
    }
}
