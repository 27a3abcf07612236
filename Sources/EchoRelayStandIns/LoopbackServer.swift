import EchoRelayCore
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// Runs a Hummingbird router on 127.0.0.1 at an ephemeral port for the length of `body`,
/// which is given the port: the shared machinery of the stand-in provider and subscriber, and
/// of the benchmark's stand-ins. It stops with a graceful shutdown (cancelled after 2 s):
/// cancelling a server outright can trap in NIO when a connection was accepted and not yet
/// served (swift-nio #3481), which a test's last request makes likely.
public enum LoopbackServer {
    /// `host` and `port` choose where it listens (another loopback address, a fixed port).
    public static func run<Result: Sendable>(
        _ router: Router<BasicRequestContext>, host: String = "127.0.0.1", port requested: Int = 0, logger: Logger = Logger(label: "echorelay.stand-in", factory: { _ in SwiftLogNoOpLogHandler() }),
        onStop: @escaping @Sendable () -> Void = {},
        _ body: (Int) async throws -> Result
    ) async throws -> Result {
        let started = Gate()
        let port = Mutex(0)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(host, port: requested)),
            onServerRunning: { channel in
                port.withLock { $0 = channel.localAddress?.port ?? 0 }
                started.open()
            },
            logger: logger
        )
        var configuration = ServiceGroupConfiguration(services: [app], logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(2)
        let services = ServiceGroup(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { started.open() }  // a server that fails to start must not leave us waiting
                try await services.run()
            }
            await started.wait()
            let listening = port.withLock { $0 }
            guard listening != 0 else {
                try await group.next()  // the server's own error, if it gave one
                throw StandInError("a loopback server stopped before it listened")
            }
            let result: Result
            do {
                result = try await body(listening)
            } catch {
                onStop()
                await services.triggerGracefulShutdown()
                throw error
            }
            onStop()
            await services.triggerGracefulShutdown()
            return result
        }
    }
}

/// A stand-in that did not get what it waited for, or could not start.
public struct StandInError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
