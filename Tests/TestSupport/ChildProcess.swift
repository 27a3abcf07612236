import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The `echorelay` executable built beside the test bundle, run as a real child process.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `process` and the pipes are set up in init and only read afterwards;
    // Process is safe to query from any thread, and the captured output sits behind a Mutex.
    public let process = Process()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let captured = CapturedOutput()

    public static var echorelayBinary: URL {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("echorelay")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../.build/debug/echorelay").standardized
    }

    /// Runs the built `echorelay` with `arguments`, or another `executable`.
    public init(_ arguments: [String], environment: [String: String] = [:], workingDirectory: URL? = nil,
                executable: URL? = nil) throws {
        process.executableURL = executable ?? Self.echorelayBinary
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ECHORELAY_") }
        env.merge(environment) { _, new in new }
        process.environment = env
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        // Drain both pipes as output arrives: a child that fills a pipe nobody reads blocks.
        stdoutPipe.fileHandleForReading.readabilityHandler = { [captured] handle in
            let data = handle.availableData
            captured.output.withLock { $0.stdout.append(data) }
        }
        stderrPipe.fileHandleForReading.readabilityHandler = { [captured] handle in
            let data = handle.availableData
            captured.output.withLock { $0.stderr.append(data) }
        }
        try ProcessLauncher.run(process)
    }

    /// Waits for the process to exit, killing it after `timeout`.
    @discardableResult
    public func wait(timeout: Duration = .seconds(30)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline {
                kill(process.processIdentifier, SIGKILL)
                throw TestSetupError("echorelay \(process.arguments ?? []) did not exit within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        // Let the readability handlers take the last bytes before the pipes are read.
        try await Task.sleep(for: .milliseconds(100))
        return process.terminationStatus
    }

    public func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits until a `serve` child answers `/healthz`, failing early if it exits.
    public func waitUntilAnswering(_ http: HTTPTestClient, within limit: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            guard process.isRunning else { throw TestSetupError("serve exited early: \(standardError)") }
            if (try? await http.get("/healthz"))?.status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        signal(SIGKILL)
        throw TestSetupError("serve did not answer /healthz within \(limit)")
    }

    /// Everything the process has written so far (all of it, once it has exited).
    public var standardOutput: String { String(decoding: captured.output.withLock { $0.stdout }, as: UTF8.self) }
    public var standardError: String { String(decoding: captured.output.withLock { $0.stderr }, as: UTF8.self) }

    /// Runs a command to completion and returns its exit status and output.
    public static func run(
        _ arguments: [String], environment: [String: String] = [:], workingDirectory: URL? = nil
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(arguments, environment: environment, workingDirectory: workingDirectory)
        let status = try await child.wait()
        return (status, child.standardOutput, child.standardError)
    }
}

/// A TCP port that was free a moment ago on 127.0.0.1.
public func freeLoopbackPort() throws -> Int {
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

private func bindLoopback(_ fd: Int32) throws -> Int {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
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

/// What a child process wrote, appended from the pipes' handlers.
final class CapturedOutput: Sendable {
    let output = Mutex((stdout: Data(), stderr: Data()))
}

/// Launches child processes one at a time. Foundation's Process.run() on Linux is not safe to
/// call from several threads at once (fresh-clone CI runs crashed in its memmove while tests
/// launched children in parallel), so every launch in the test bundle takes this one lock;
/// the children still run in parallel.
public enum ProcessLauncher {
    private static let launching = Mutex(())

    public static func run(_ process: Process) throws {
        try launching.withLock { _ in try process.run() }
    }
}
