import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, its standard input fed from `input` and its
/// output captured. Every child of the test bundle starts through this, not Foundation's
/// `Process`: on Linux (Swift 6.3.1) `Process.run()` now and then crashes reading
/// `/proc/self/fd` (swift-corelibs-foundation PR #5472, a 256-byte over-read of a dirent), and
/// this suite starts hundreds of children.
public final class Spawned: Sendable {
    public let pid: pid_t
    public let commandLine: [String]
    private let exit = Mutex<Int32?>(nil)
    private let output = Mutex((stdout: Data(), stderr: Data(), open: 2))

    /// - environment: the child's whole environment; nil passes this process's on.
    /// - workingDirectory: where the child starts (through `env -C`, which posix_spawn lacks here).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        workingDirectory: String? = nil, input: Data = Data()
    ) throws {
        _ = Self.ignoreBrokenPipes
        var commandLine = [executable] + arguments
        if let workingDirectory { commandLine = ["/usr/bin/env", "-C", workingDirectory] + commandLine }
        self.commandLine = commandLine

        let (pid, stdin, stdout, stderr) = try Self.spawning.withLock { _ in try Self.spawn(commandLine, environment: environment) }
        self.pid = pid
        Self.feed(input, to: stdin)
        drain(stdout) { $0.stdout.append($1) }
        drain(stderr) { $0.stderr.append($1) }
    }

    /// Starts `commandLine`; returns its pid and this side's ends of its three pipes.
    private static func spawn(_ commandLine: [String], environment: [String: String]?) throws -> (pid_t, Int32, Int32, Int32) {
        closeOnExecEverything()
        let stdin = try Self.pipe(), stdout = try Self.pipe(), stderr = try Self.pipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The pipes are close-on-exec; dup2 makes the child's copies stay open.
        posix_spawn_file_actions_adddup2(&actions, stdin.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr.write, 2)

        // Signals as a fresh process has them, whatever this test process ignores or blocks.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), mask = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = commandLine.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, commandLine[0], &actions, &attributes, argv, envp)
        for fd in [stdin.read, stdout.write, stderr.write] { close(fd) }
        guard result == 0 else {
            for fd in [stdin.write, stdout.read, stderr.read] { close(fd) }
            throw TestSetupError("could not start \(commandLine[0]): \(String(cString: strerror(result)))")
        }
        return (pid, stdin.write, stdout.read, stderr.read)
    }

    /// Whether the child is still running (reaps it once it has exited).
    public var isRunning: Bool { status == nil }

    /// The exit status once the child has exited (128 + the signal if a signal ended it).
    public var status: Int32? {
        exit.withLock { known in
            if let known { return known }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
            let signal = raw & 0x7f
            known = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            return known
        }
    }

    public func signal(_ signal: Int32) {
        guard isRunning else { return }
        kill(pid, signal)
    }

    /// Waits for the child to exit, killing it after `timeout`, then for the end of its output.
    @discardableResult
    public func wait(timeout: Duration = .seconds(30)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now > deadline {
                kill(pid, SIGKILL)
                // The program and its first argument only: later arguments may be tokens or secrets.
                throw TestSetupError("\(commandLine.prefix(2).joined(separator: " ")) did not exit within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // A grandchild may hold the pipes open (a daemon), so the output's end is awaited briefly.
        let outputDeadline = ContinuousClock.now + .seconds(2)
        while output.withLock({ $0.open > 0 }), ContinuousClock.now < outputDeadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return status ?? -1
    }

    /// The same for callers outside the concurrency pool's reach (a quick child, no server
    /// in this process waiting on a pool thread).
    @discardableResult
    public func waitUntilExit() -> Int32 {
        while isRunning { usleep(10_000) }
        let outputDeadline = ContinuousClock.now + .seconds(2)
        while output.withLock({ $0.open > 0 }), ContinuousClock.now < outputDeadline { usleep(5_000) }
        return status ?? -1
    }

    /// What the child has written so far (all of it, once `wait` has returned).
    public var standardOutput: Data { output.withLock { $0.stdout } }
    public var standardError: Data { output.withLock { $0.stderr } }

    // MARK: Plumbing

    /// A child that exits without reading all its input must not kill the test process.
    private static let ignoreBrokenPipes: Void = { _ = Glibc.signal(SIGPIPE, SIG_IGN) }()

    /// Held from making the pipes to the spawn: `pipe2` is not visible from Swift here, so
    /// close-on-exec is set after `pipe`, and no other spawn may slip in between.
    private static let spawning = Mutex(())

    /// Marks every descriptor of this process close-on-exec, as Foundation's Process closes
    /// them in the child: a child that inherited this process's database sockets would keep
    /// their connections open after this process closed them, until the server ran out.
    /// (FileManager reads `/proc/self/fd` safely; only Process had the over-read.)
    private static func closeOnExecEverything() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for entry in entries {
            guard let fd = Int32(entry), fd > 2 else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0, flags & FD_CLOEXEC == 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    private static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { throw TestSetupError("pipe failed: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// Writes `input` on a thread of its own, then closes the pipe so the child sees its end.
    private static func feed(_ input: Data, to fd: Int32) {
        Thread.detachNewThread {
            input.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { break }  // the child closed its input early
                    offset += written
                }
            }
            close(fd)
        }
    }

    /// Reads `fd` to its end on a thread of its own: a child that fills a pipe nobody reads blocks.
    private func drain(_ fd: Int32, into append: @escaping @Sendable (inout (stdout: Data, stderr: Data, open: Int), Data) -> Void) {
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                let chunk = Data(buffer[0..<count])
                output.withLock { append(&$0, chunk) }
            }
            close(fd)
            output.withLock { $0.open -= 1 }
        }
    }
}
