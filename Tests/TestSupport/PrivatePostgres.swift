import Foundation

/// A PostgreSQL server of one test's own (`scripts/postgres-instance`), to stop and start
/// under a running EchoRelay. The shared test server cannot be stopped: other tests use it.
public struct PrivatePostgres: Sendable {
    public let folder: String
    public let port: Int

    /// Its maintenance database: the server is this test's alone.
    public var database: TestDatabase {
        TestDatabase(url: "postgres://echorelay@127.0.0.1:\(port)/postgres?sslmode=disable", name: "postgres")
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../scripts/postgres-instance").standardized

    /// Creates and starts a server, runs `body`, and removes the server whatever happens.
    public static func withServer<Result: Sendable>(_ body: @Sendable (PrivatePostgres) async throws -> Result) async throws -> Result {
        let folder = "/tmp/echorelay-fault-pg-" + UUID().uuidString.prefix(8).lowercased()
        let server = PrivatePostgres(folder: folder, port: try freeLoopbackPort())
        do {
            try await server.run("create", folder)
            try await server.start()
            let result = try await body(server)
            try await server.run("remove", folder)
            return result
        } catch {
            try? await server.run("remove", folder)
            throw error
        }
    }

    public func stop() async throws { try await run("stop", folder) }
    public func start() async throws { try await run("start", folder, String(port)) }

    private func run(_ arguments: String...) async throws {
        let child = try ChildProcess(arguments, executable: Self.script)
        let status = try await child.wait(timeout: .seconds(120))
        guard status == 0 else {
            throw TestSetupError("postgres-instance \(arguments.joined(separator: " ")) exited \(status): \(child.standardError)")
        }
    }
}
