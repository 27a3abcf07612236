import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The `echorelay` executable built beside the test bundle (or another program), run as a
/// real child process.
public final class ChildProcess: Sendable {
    private let child: Spawned

    public static var echorelayBinary: URL {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("echorelay")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../.build/debug/echorelay").standardized
    }

    /// Runs the built `echorelay` with `arguments`, or another `executable`, with this
    /// process's environment less its `ECHORELAY_*` settings, plus `environment`.
    public init(_ arguments: [String], environment: [String: String] = [:], workingDirectory: URL? = nil,
                executable: URL? = nil, input: Data = Data()) throws {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ECHORELAY_") }
        env.merge(environment) { _, new in new }
        child = try Spawned((executable ?? Self.echorelayBinary).path, arguments, environment: env,
                            workingDirectory: workingDirectory?.path, input: input)
    }

    public var isRunning: Bool { child.isRunning }

    /// The process id, for reading `/proc`.
    public var pid: pid_t { child.pid }

    /// A child the test never waited for (it failed before) is killed, not left running: a
    /// `serve` left over from a failed test kept running for the rest of the suite.
    deinit {
        if child.isRunning { child.signal(SIGKILL) }
    }

    /// Waits for the process to exit, killing it after `timeout`.
    @discardableResult
    public func wait(timeout: Duration = .seconds(30)) async throws -> Int32 {
        try await child.wait(timeout: timeout)
    }

    public func signal(_ signal: Int32) {
        child.signal(signal)
    }

    /// Waits until a `serve` child answers `/healthz`, failing early if it exits.
    public func waitUntilAnswering(_ http: HTTPTestClient, within limit: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            guard child.isRunning else { throw TestSetupError("serve exited early: \(standardError)") }
            if (try? await http.get("/healthz"))?.status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        signal(SIGKILL)
        throw TestSetupError("serve did not answer /healthz within \(limit)")
    }

    /// Everything the process has written so far (all of it, once it has exited).
    public var standardOutput: String { String(decoding: child.standardOutput, as: UTF8.self) }
    public var standardError: String { String(decoding: child.standardError, as: UTF8.self) }

    /// Runs a command to completion and returns its exit status and output.
    public static func run(
        _ arguments: [String], environment: [String: String] = [:], workingDirectory: URL? = nil, input: Data = Data()
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(arguments, environment: environment, workingDirectory: workingDirectory, input: input)
        let status = try await child.wait()
        return (status, child.standardOutput, child.standardError)
    }
}

/// A TCP port that was free a moment ago on 127.0.0.1.
public func freeLoopbackPort() throws -> Int {
    // Below the kernel's ephemeral range: a port picked from inside it (port 0) can be handed
    // to another process's outgoing connection (a database client, say) between this check
    // and the server binding it, and the server then fails with "Address already in use".
    let ephemeral = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
        .split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
    if ephemeral > 12_000 {
        for _ in 0..<200 {
            let port = Int.random(in: 10_000..<ephemeral)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw TestSetupError("socket() failed") }
            defer { close(fd) }
            if (try? bindLoopback(fd, port: port)) != nil { return port }
        }
    }
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSetupError("socket() failed") }
    defer { close(fd) }
    return try bindLoopback(fd)
}

/// Runs `body` with a port on 127.0.0.1 that refuses connections: it stays bound, without
/// listening, until `body` returns, so no server started meanwhile can take it.
public func withRefusingLoopbackPort<Result>(_ body: (Int) async throws -> Result) async throws -> Result {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSetupError("socket() failed") }
    defer { close(fd) }
    return try await body(try bindLoopback(fd))
}

private func bindLoopback(_ fd: Int32, port: Int = 0) throws -> Int {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0 else { throw TestSetupError("bind() failed") }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
