import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A pg_auto_failover formation of one test's own (`scripts/ha-formation`): a monitor, a
/// primary and one or two synchronous secondaries on loopback, to switch over, kill and restart.
public struct HAFormation: Sendable {
    public let folder: String
    /// The monitor's port; the nodes are on the next ones.
    public let port: Int
    /// Two or three.
    public let nodes: Int

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../scripts/ha-formation").standardized

    /// Creates the formation of `nodes` nodes, runs `body`, and removes it whatever happens.
    public static func with<Result: Sendable>(nodes: Int = 2, _ body: @Sendable (HAFormation) async throws -> Result) async throws -> Result {
        // The monitor's port and the nodes' after it, checked free one by one.
        var base = 0
        for _ in 0..<50 {
            let candidate = try freeLoopbackPort()
            guard candidate < 65_000 else { continue }
            if try (1...nodes).allSatisfy({ try isFree(candidate + $0) }) { base = candidate; break }
        }
        guard base > 0 else { throw TestSetupError("no \(nodes + 1) free consecutive ports for the formation") }
        let formation = HAFormation(folder: "/tmp/echorelay-ha-" + UUID().uuidString.prefix(8).lowercased(), port: base, nodes: nodes)
        do {
            _ = try await formation.run("create", String(base), String(nodes), timeout: .seconds(300))
            let result = try await body(formation)
            _ = try await formation.run("remove")
            return result
        } catch {
            _ = try? await formation.run("remove")
            throw error
        }
    }

    /// The URI `pg_autoctl show uri` prints: every node, `target_session_attrs=read-write`.
    public func uri() async throws -> String {
        try await run("uri").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The port of the node that is primary now.
    public func primaryPort() async throws -> Int {
        let text = try await run("primary").trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(text) else { throw TestSetupError("no primary: \(try await run("state"))") }
        return port
    }

    /// A planned switchover; returns once a primary and a secondary are back.
    public func switchover() async throws { _ = try await run("switchover", timeout: .seconds(180)) }

    /// kill -9 of the primary's keeper and postmaster; returns its port.
    public func killPrimary() async throws -> Int {
        let text = try await run("kill-primary").trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(text) else { throw TestSetupError("kill-primary printed \(text)") }
        return port
    }

    /// kill -9 of a secondary's keeper and postmaster; returns its port.
    public func killStandby() async throws -> Int {
        let text = try await run("kill-standby").trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(text) else { throw TestSetupError("kill-standby printed \(text)") }
        return port
    }

    /// Starts again the keeper of the node on `port`, which rejoins as a secondary (a former
    /// primary rewound first); `waitUntilWhole()` for it.
    public func restart(port: Int) async throws { try await run("restart", String(port)) }

    /// Waits until one node is primary and every other secondary.
    public func waitUntilWhole() async throws { try await run("wait", timeout: .seconds(150)) }

    /// Waits until a node other than `port` takes writes as the primary; returns its port.
    public func waitForPrimary(otherThan port: Int, within limit: Duration = .seconds(180)) async throws -> Int {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let state = (try? await run("state")) ?? ""
            for line in state.split(separator: "\n") {
                let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
                guard cells.count == 7, cells[5] == "primary" || cells[5] == "wait_primary",
                      cells[6] == cells[5], cells[4].hasPrefix("read-write"),
                      let nodePort = Int(cells[2].split(separator: ":").last ?? ""), nodePort != port else { continue }
                return nodePort
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw TestSetupError("no new primary within \(limit): \((try? await run("state")) ?? "")")
    }

    public func state() async throws -> String { try await run("state") }

    /// For a failed test: the state, whether each node is in recovery and read-only to a new
    /// session, and its keeper's last transitions (pg_auto_failover keeps a promoted standby
    /// read-only until the old primary's demote timeout has passed).
    public func report() async -> String { (try? await run("report")) ?? "(no report)" }

    private static func isFree(_ port: Int) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSetupError("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    @discardableResult
    private func run(_ arguments: String..., timeout: Duration = .seconds(60)) async throws -> String {
        let child = try ChildProcess([arguments[0], folder] + arguments.dropFirst(), executable: Self.script)
        let status = try await child.wait(timeout: timeout)
        guard status == 0 else {
            throw TestSetupError("ha-formation \(arguments.joined(separator: " ")) exited \(status): \(child.standardError)")
        }
        return child.standardOutput
    }
}
