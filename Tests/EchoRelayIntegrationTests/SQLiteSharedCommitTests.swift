import EchoRelayCore
import Foundation
import Synchronization
import Testing
import TestSupport

@testable import EchoRelaySQLite

/// The embedded store's single writer: writers queued when a transaction begins share it and
/// its commit, each in a savepoint of its own, and each answers only once the commit that
/// holds it is done.
@Suite struct SQLiteSharedCommitTests {
    final class Holding: Sendable {
        private let state = Mutex(false)
        var isSet: Bool { state.withLock { $0 } }
        func set() { state.withLock { $0 = true } }
    }

    @Test func writersQueuedBehindOneShareItsCommitAndAFailingOneIsUndoneAlone() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-shared-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await SQLiteEventStore.open(path: folder.appendingPathComponent("echorelay.sqlite").path, logger: TestLogger.quiet)
        try await store.migrate()
        let session = store.session
        let before = session.commits
        let writers = 20

        let holding = Holding()
        try await withThrowingTaskGroup(of: Result<Int, IngestError>.self) { group in
            // The first holds the writer until every other is queued behind it.
            group.addTask {
                try await session.write { db in
                    try await db.run("INSERT INTO settings (key, value) VALUES ('w0', 'x')")
                    holding.set()
                    while session.waiting < writers - 1 { try await Task.sleep(for: .milliseconds(5)) }
                    return .success(0)
                }
            }
            while !holding.isSet { try await Task.sleep(for: .milliseconds(1)) }
            for index in 1..<writers {
                group.addTask {
                    do {
                        return try await session.write { db in
                            try await db.run("INSERT INTO settings (key, value) VALUES (?1, 'x')", ["w\(index)"])
                            if index == 7 { throw IngestError.conflict(id: "w7") }
                            return .success(index)
                        }
                    } catch let refused as IngestError {
                        return .failure(refused)
                    }
                }
            }
            var answered: [Result<Int, IngestError>] = []
            for try await result in group { answered.append(result) }
            #expect(answered.count == writers)
            #expect(answered.filter { (try? $0.get()) == nil } == [.failure(.conflict(id: "w7"))], "the failing writer's own (domain) error, as it threw it")
        }

        // The first began with nobody waiting, so it commits alone; the nineteen that queued
        // meanwhile share the next commit, as a group commit takes what queued during the last.
        #expect(session.commits - before == 2, "one commit for the first writer and one for the \(writers - 1) behind it")
        let stored = try await session.read { db in
            try await db.rows("SELECT key FROM settings WHERE key LIKE 'w%'").map { try $0.string(0) }
        }
        #expect(Set(stored) == Set((0..<writers).filter { $0 != 7 }.map { "w\($0)" }), "everything but the failed writer's insert")
        try await store.close()
    }
}
