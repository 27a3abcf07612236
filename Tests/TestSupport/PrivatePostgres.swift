import Foundation

/// A PostgreSQL server of one test's own (`scripts/postgres-instance`), to stop and start
/// under a running EchoRelay. The shared test server cannot be stopped: other tests use it.
public struct PrivatePostgres: Sendable {
    public let folder: String
    public let port: Int
    /// fsync and synchronous commit on, as in production (`ECHORELAY_PG_DURABLE=1`): what a
    /// synchronous standby's guarantee needs. Off by default, for speed.
    public var durable = false

    /// Its maintenance database: the server is this test's alone.
    public var database: TestDatabase {
        TestDatabase(url: "postgres://echorelay@127.0.0.1:\(port)/postgres?sslmode=disable", name: "postgres")
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../scripts/postgres-instance").standardized

    /// Creates and starts a server, runs `body`, and removes the server whatever happens.
    public static func withServer<Result: Sendable>(
        durable: Bool = false, _ body: @Sendable (PrivatePostgres) async throws -> Result
    ) async throws -> Result {
        let folder = "/tmp/echorelay-fault-pg-" + UUID().uuidString.prefix(8).lowercased()
        let server = PrivatePostgres(folder: folder, port: try freeLoopbackPort(), durable: durable)
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
    /// Stops at once, as a crash would: no shutdown checkpoint, connections cut.
    public func crash() async throws { try await run("crash", folder) }
    /// Stops every process of the server (SIGSTOP): its sockets stay open and nothing answers,
    /// as a hung host. Removing the server thaws and stops it.
    public func freeze() async throws { try await run("freeze", folder) }
    /// Makes a standby the primary, and waits until it takes writes.
    public func promote() async throws { try await run("promote", folder) }

    /// A streaming standby of this server, started, for the length of `body`; removed afterwards.
    public func withStandby<Result: Sendable>(_ body: @Sendable (PrivatePostgres) async throws -> Result) async throws -> Result {
        let standby = PrivatePostgres(folder: folder + "-standby", port: try freeLoopbackPort(), durable: durable)
        do {
            try await standby.run("standby", standby.folder, String(port))
            try await standby.start()
            let result = try await body(standby)
            try await standby.run("remove", standby.folder)
            return result
        } catch {
            try? await standby.run("remove", standby.folder)
            throw error
        }
    }

    private func run(_ arguments: String...) async throws {
        let child = try ChildProcess(arguments, environment: durable ? ["ECHORELAY_PG_DURABLE": "1"] : [:], executable: Self.script)
        let status = try await child.wait(timeout: .seconds(120))
        guard status == 0 else {
            throw TestSetupError("postgres-instance \(arguments.joined(separator: " ")) exited \(status): \(child.standardError)")
        }
    }
}
