import EchoRelayCore
import Hummingbird

/// Runs a Hummingbird router on 127.0.0.1 at an ephemeral port for the length of `body`:
/// the shared machinery of the stand-in provider and subscriber.
enum LoopbackServer {
    static func run<Result: Sendable>(
        _ router: Router<BasicRequestContext>,
        onPort: @escaping @Sendable (Int) -> Void,
        onStop: @escaping @Sendable () -> Void,
        _ body: () async throws -> Result
    ) async throws -> Result {
        let started = Gate()
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                onPort(channel.localAddress?.port ?? 0)
                started.open()
            },
            logger: TestLogger.quiet
        )
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.run() }
            await started.wait()
            defer {
                onStop()
                group.cancelAll()
            }
            return try await body()
        }
    }
}
