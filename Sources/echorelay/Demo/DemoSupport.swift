import Dispatch
import EchoRelayCore
import Foundation
import Hummingbird
import Logging
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

/// A Hummingbird router served on 127.0.0.1 for the length of the demo: started before the
/// demo needs it (a port in use is a clear error at once) and stopped in every case.
final class DemoHTTPServer: Sendable {
    private let task: Task<Void, Never>

    private init(task: Task<Void, Never>) {
        self.task = task
    }

    /// Starts serving and returns once the port is bound.
    static func start(
        _ name: String, port: Int, flag: String, router: Router<BasicRequestContext>
    ) async throws(ClientError) -> DemoHTTPServer {
        let started = StartSignal()
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil),
            onServerRunning: { _ in started.resolve(nil) },
            // The demo prints its own lines; the servers' request logs would only add noise.
            logger: Logger(label: "echorelay.demo", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let task = Task {
            do {
                try await app.run()
                started.resolve(DemoServerStopped())
            } catch {
                started.resolve(error)
            }
        }
        guard let error = await started.wait() else { return DemoHTTPServer(task: task) }
        await task.value
        let text = String(describing: error)
        if text.contains("Address already in use") || text.contains("errno: 98") || text.contains("EADDRINUSE") {
            throw ClientError(
                "the \(name) cannot listen on 127.0.0.1:\(port): the port is in use",
                hint: "is another echorelay demo running? Stop it, or choose another port with \(flag)"
            )
        }
        throw ClientError("the \(name) cannot listen on 127.0.0.1:\(port): \(text)", hint: "choose another port with \(flag)")
    }

    func stop() async {
        task.cancel()
        await task.value
    }
}

private struct DemoServerStopped: Error, CustomStringConvertible {
    var description: String { "the server stopped before it started listening" }
}

/// Resolved once, by whichever comes first: the server listening (nil) or failing (its error).
private final class StartSignal: Sendable {
    private struct State {
        var result: (any Error)??
        var waiter: CheckedContinuation<(any Error)?, Never>?
    }

    private let state = Mutex(State())

    func resolve(_ error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<(any Error)?, Never>? in
            guard state.result == nil else { return nil }
            state.result = .some(error)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: error)
    }

    func wait() async -> (any Error)? {
        await withCheckedContinuation { continuation in
            let result = state.withLock { state -> (any Error)?? in
                if state.result == nil { state.waiter = continuation }
                return state.result
            }
            if let result { continuation.resume(returning: result) }
        }
    }
}

/// Ctrl-C (SIGINT) and SIGTERM cancel the demo, so that it cleans up — deletes its
/// subscription, stops its servers — before it exits. A second Ctrl-C exits at once.
final class DemoInterruptHandler: @unchecked Sendable {
    // @unchecked: the sources are created in init and only cancelled in `remove()`.
    private let sources: [any DispatchSourceSignal]
    private let fired = FiredFlag()

    private final class FiredFlag: Sendable {
        private let value = Mutex(false)

        /// True the first time only.
        func fire() -> Bool {
            value.withLock { fired in
                defer { fired = true }
                return !fired
            }
        }
    }

    init(_ onInterrupt: @escaping @Sendable () -> Void) {
        var sources: [any DispatchSourceSignal] = []
        let fired = self.fired
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                // The next signal ends the process the usual way, should the clean-up hang.
                signal(number, SIG_DFL)
                if fired.fire() { onInterrupt() }
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
