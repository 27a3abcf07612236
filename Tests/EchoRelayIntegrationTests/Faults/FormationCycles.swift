import EchoRelayCore
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The two formations the README recommends, on a real failover manager (pg_auto_failover),
/// each through repeated cycles of a planned switchover, a `kill -9` of the primary (keeper and
/// postmaster, then started again to rejoin) and a `kill -9` of a standby (then started again),
/// under a steady load, with `ECHORELAY_DURABILITY=standby`. `serve` is given the URI
/// `pg_autoctl show uri` prints and follows every move by itself. Each cycle checks that
/// nothing acknowledged is lost, every acknowledged event is delivered in per-user order, and
/// a repeat carries the same webhook-id; it prints a `FAULT cycle` line with the longest
/// stretch without a `202` around each fault (RELIABILITY.md). 3 cycles, times `ECHORELAY_FAULT_SCALE`.
extension FaultTests {
    static var formationCycles: Int { 3 * scale }

    /// One primary and two standbys, `number_sync_standbys=1`: with any one node down a
    /// standby still confirms, so ingest keeps acknowledging while a standby is away.
    @Test(.timeLimit(.minutes(20)))
    func theThreeNodeFormationLosesNothingAcknowledgedOverRepeatedFaults() async throws {
        try await runFormationCycles(nodes: 3)
    }

    /// One primary and one standby: while either node is down nothing can hold a second copy,
    /// so ingest answers `503`, never `202`, until the node is back.
    @Test(.timeLimit(.minutes(20)))
    func theTwoNodeFormationRefusesWithoutItsStandbyAndLosesNothingAcknowledgedOverRepeatedFaults() async throws {
        try await runFormationCycles(nodes: 2)
    }

    private func runFormationCycles(nodes: Int) async throws {
        try await HAFormation.with(nodes: nodes) { formation in
            let uri = try await formation.uri()
            let primary = { @Sendable (port: Int) in TestDatabase(url: "postgres://postgres@127.0.0.1:\(port)/echorelay?sslmode=disable", name: "echorelay") }
            try await FaultLab.run(settings: ["PGUSER": "postgres", "ECHORELAY_LOG_LEVEL": "info", "ECHORELAY_DURABILITY": "standby"],
                                   database: primary(try await formation.primaryPort())) { firstLab in
                var lab = firstLab
                let port = try freeLoopbackPort()
                // Connects through the formation's URI: every node, the one taking writes first.
                let serve = try await lab.serve(port: port, settings: ["ECHORELAY_DATABASE_URL": uri])
                try await lab.subscribe(through: port)
                var acknowledged = 0
                let provider = lab.provider
                for cycle in 1...Self.formationCycles {
                    let loadSwitch = LoadSwitch()
                    let load = Task {
                        try await pushLoad(ports: [port], provider: provider, perUser: 100_000, pause: .milliseconds(150),
                                           within: .seconds(600), idPrefix: "evt_c\(cycle)", until: loadSwitch)
                    }
                    do {
                        let faults = try await runCycle(formation, lab: lab, port: port, cycle: cycle)
                        loadSwitch.stop()
                        let report = try await load.value
                        lab.database = primary(try await formation.primaryPort())
                        try await lab.waitUntilDelivered(report.acknowledged, within: .seconds(120))
                        try await lab.expectNothingLost("cycle \(cycle) of \(nodes) nodes", report)
                        faults.check(report, nodes: nodes)
                        acknowledged += report.acknowledged.count
                        print("FAULT cycle \(cycle) of \(nodes) nodes: " + faults.summary(report))
                    } catch {
                        loadSwitch.stop()
                        _ = try? await load.value
                        print("FAULT cycle \(cycle) of \(nodes) nodes failed; serve's log:\n\(serve.standardError.suffix(20_000))\n\(await formation.report())")
                        throw error
                    }
                }
                serve.signal(SIGTERM)
                do {
                    #expect(try await serve.wait(timeout: .seconds(30)) == 0)
                } catch {
                    print("FAULT formation of \(nodes) nodes: serve did not stop; its log:\n\(serve.standardError.suffix(20_000))")
                    throw error
                }
                print("FAULT formation of \(nodes) nodes: \(Self.formationCycles) cycles, \(acknowledged) events acknowledged, 0 lost")
            }
        }
    }

    /// One cycle's faults, in order, with the instants the checks and figures need.
    private func runCycle(_ formation: HAFormation, lab: FaultLab, port: Int, cycle: Int) async throws -> CycleFaults {
        var faults = CycleFaults()
        try await Task.sleep(for: .seconds(1))
        faults.switchoverStarted = .now
        try await formation.switchover()
        faults.switchoverDone = .now
        try await Task.sleep(for: .seconds(1))

        let killedPrimary = try await formation.killPrimary()
        faults.primaryKilled = .now
        _ = try await formation.waitForPrimary(otherThan: killedPrimary)
        faults.promoted = .now
        try await formation.restart(port: killedPrimary)
        try await formation.waitUntilWhole()
        faults.primaryRejoined = .now
        try await Task.sleep(for: .seconds(1))

        let killedStandby = try await formation.killStandby()
        faults.standbyKilled = .now
        // Long enough for the monitor to give up on the standby (a two-node primary then
        // commits alone, the window RELIABILITY.md's open item was in); an event pushed
        // meanwhile is refused on two nodes and taken on three.
        let probe = try lab.event("evt_c\(cycle)_probe", user: FaultLab.users[0])
        for _ in 0..<4 {
            try await Task.sleep(for: .seconds(2))
            faults.probeStatuses.append(try await lab.push(probe, to: port).status)
        }
        faults.standbyRestarted = .now
        try await formation.restart(port: killedStandby)
        try await formation.waitUntilWhole()
        faults.whole = .now
        // The provider's retry of the probe once a standby is back: acknowledged, whether it
        // was stored while refused or is stored now.
        let deadline = ContinuousClock.now + .seconds(30)
        while try await lab.push(probe, to: port).status != 202 {
            guard ContinuousClock.now < deadline else { throw TestSetupError("the probe was never acknowledged once the standby was back") }
            try await Task.sleep(for: .milliseconds(250))
        }
        faults.probeAcknowledgedAfter = .now - faults.whole
        try await Task.sleep(for: .seconds(2))  // the load acknowledged again
        faults.end = .now
        return faults
    }
}

/// When each fault of a cycle happened and what the probe got while the standby was down.
private struct CycleFaults {
    var switchoverStarted = ContinuousClock.now, switchoverDone = ContinuousClock.now
    var primaryKilled = ContinuousClock.now, promoted = ContinuousClock.now, primaryRejoined = ContinuousClock.now
    var standbyKilled = ContinuousClock.now, standbyRestarted = ContinuousClock.now, whole = ContinuousClock.now
    var end = ContinuousClock.now
    var probeStatuses: [Int] = []
    var probeAcknowledgedAfter = Duration.zero

    func check(_ report: LoadReport, nodes: Int) {
        let whileStandbyDown = report.acknowledged(sentFrom: standbyKilled, to: standbyRestarted)
        if nodes == 2 {
            #expect(whileStandbyDown == 0, "\(whileStandbyDown) events acknowledged while the only standby was down")
            #expect(probeStatuses.allSatisfy { $0 == 503 }, "the probe while the standby was down: \(probeStatuses)")
            #expect(report.refused(from: standbyKilled, to: standbyRestarted) > 0, "the load was refused while the standby was down")
        } else {
            #expect(whileStandbyDown > 0, "the other standby confirms: acknowledged while one was down")
            #expect(probeStatuses.allSatisfy { $0 == 202 }, "the probe while one standby was down: \(probeStatuses)")
        }
        #expect(report.acknowledged(sentFrom: whole, to: end) > 0, "acknowledging again once the formation is whole")
    }

    /// The longest stretch without a `202` around each fault (from its start to the next
    /// fault's), and how long the formation took to move and to mend.
    func summary(_ report: LoadReport) -> String {
        "acknowledged=\(report.acknowledged.count) refused=\(report.refused); longest stretch without a 202: "
            + "\(seconds(report.longestStretchWithoutAcknowledgement(from: switchoverStarted, to: primaryKilled))) s around the switchover "
            + "(it took \(seconds(switchoverDone - switchoverStarted)) s), "
            + "\(seconds(report.longestStretchWithoutAcknowledgement(from: primaryKilled, to: standbyKilled))) s after the primary's kill -9 "
            + "(new primary after \(seconds(promoted - primaryKilled)) s, old one back after \(seconds(primaryRejoined - primaryKilled)) s), "
            + "\(seconds(report.longestStretchWithoutAcknowledgement(from: standbyKilled, to: end))) s after the standby's kill -9 "
            + "(started again after \(seconds(standbyRestarted - standbyKilled)) s, back after \(seconds(whole - standbyKilled)) s); "
            + "probe \(probeStatuses) while it was down"
    }

    private func seconds(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}
