import EchoRelayCore
import EchoRelayStandIns
import Foundation
import Hummingbird
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where `echorelay demo` writes its steps: standard output, or standard error with `--json`
/// (so that standard output holds the JSON timeline and nothing else). Lines from the
/// stand-in provider and subscriber arrive from other threads; a lock keeps them whole.
final class DemoOutput: Sendable {
    private let toStandardError: Bool
    private let lock = Mutex(())

    init(toStandardError: Bool) {
        self.toStandardError = toStandardError
    }

    func line(_ text: String = "") {
        let data = Data((text + "\n").utf8)
        lock.withLock { _ in
            (toStandardError ? FileHandle.standardError : FileHandle.standardOutput).write(data)
        }
    }

    func step(_ number: Int, _ text: String) {
        line()
        line("[\(number)/\(DemoTour.stepCount)] \(text)")
    }

    /// A line from one of the demo's own servers, as it happens.
    func live(_ who: String, _ text: String) {
        line("      \(who): \(TextOutput.cell(text))")
    }
}

/// The demo's stand-in servers, on 127.0.0.1.
enum DemoServers {
    /// Serves `router` on `port` for the length of `body`; a port that cannot be listened on
    /// is a clear error at once, naming the `flag` that chooses another.
    static func serve<Result: Sendable>(
        _ name: String, _ router: Router<BasicRequestContext>, port: Int, flag: String, _ resources: DemoResources,
        _ body: () async throws -> Result
    ) async throws -> Result {
        var listening = false
        do {
            // No request log: the demo prints its own lines.
            return try await LoopbackServer.run(router, port: port) { _ in
                listening = true
                resources.serverStarted()
                return try await body()
            }
        } catch where !listening {
            let text = String(describing: error)
            if text.contains("Address already in use") || text.contains("errno: 98") || text.contains("EADDRINUSE") {
                throw ClientError(
                    "the \(name) cannot listen on 127.0.0.1:\(port): the port is in use",
                    hint: "is another echorelay demo running? Stop it, or choose another port with \(flag)"
                )
            }
            throw ClientError("the \(name) cannot listen on 127.0.0.1:\(port): \(text)", hint: "choose another port with \(flag)")
        }
    }
}

/// Ctrl-C (SIGINT) and SIGTERM cancel the demo, so that it cleans up — deletes its
/// subscription, stops its servers — before it exits. A second Ctrl-C exits at once.
final class DemoInterruptHandler: @unchecked Sendable {
    // @unchecked: the sources are created in init and only cancelled in `remove()`.
    private let sources: [any DispatchSourceSignal]

    /// `onInterrupt` runs once for each of the two signals that comes: it must be harmless to
    /// repeat (the demo cancels its task).
    init(_ onInterrupt: @escaping @Sendable () -> Void) {
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                // The next signal ends the process the usual way, should the clean-up hang.
                signal(number, SIG_DFL)
                onInterrupt()
            }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    func remove() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
