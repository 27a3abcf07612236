import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// No container engine runs where the tests run, so the image's build is guarded from here:
/// the files the Dockerfile's build stage copies, as `docker build` would send them (minus
/// what `.dockerignore` leaves out), must form a package SwiftPM accepts. A target folder
/// the Dockerfile forgets to copy fails `swift package describe` as it fails the build.
@Suite struct ContainerBuildContextTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().standardizedFileURL

    /// `COPY` sources and destinations of the build stage (the first `FROM`), in order.
    static func buildStageCopies() throws -> [(sources: [String], destination: String)] {
        let dockerfile = try String(contentsOf: root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        var copies: [(sources: [String], destination: String)] = []
        var stages = 0
        for line in dockerfile.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("FROM ") { stages += 1; continue }
            guard stages == 1, line.hasPrefix("COPY ") else { continue }
            let words = line.split(separator: " ").dropFirst().filter { !$0.hasPrefix("--") }.map(String.init)
            guard words.count >= 2 else { continue }
            copies.append((Array(words.dropLast()), words.last!))
        }
        return copies
    }

    /// `.dockerignore`'s patterns, which Docker matches against paths from the context's root.
    static func ignorePatterns() throws -> [String] {
        try String(contentsOf: root.appendingPathComponent(".dockerignore"), encoding: .utf8)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            .map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    /// Whether Docker leaves `path` (relative to the context) out: a pattern matches it or
    /// one of the folders it is in.
    static func ignored(_ path: String, patterns: [String]) -> Bool {
        let parts = path.split(separator: "/")
        return (1...parts.count).contains { count in
            let prefix = parts.prefix(count).joined(separator: "/")
            return patterns.contains { fnmatch($0, prefix, FNM_PATHNAME) == 0 }
        }
    }

    /// The build stage's files, copied into `folder` as the image's WORKDIR would hold them.
    static func assemble(into folder: URL, leavingOut left: Set<String> = []) throws {
        let manager = FileManager.default
        let patterns = try ignorePatterns()
        let top = try manager.contentsOfDirectory(atPath: root.path)
        for (sources, destination) in try buildStageCopies() {
            for source in sources where !left.contains(source) {
                for name in top.filter({ fnmatch(source, $0, 0) == 0 }) + (source.contains("/") ? [source] : []) {
                    try copy(name, to: destination.hasSuffix("/") ? destination + name : destination, into: folder, patterns: patterns)
                }
            }
        }
    }

    static func copy(_ path: String, to destination: String, into folder: URL, patterns: [String]) throws {
        let manager = FileManager.default
        guard !ignored(path, patterns: patterns) else { return }
        let from = root.appendingPathComponent(path), to = folder.appendingPathComponent(destination).standardizedFileURL
        var isFolder: ObjCBool = false
        guard manager.fileExists(atPath: from.path, isDirectory: &isFolder) else { return }
        if isFolder.boolValue {
            try manager.createDirectory(at: to, withIntermediateDirectories: true)
            for name in try manager.contentsOfDirectory(atPath: from.path) {
                try copy(path + "/" + name, to: destination + "/" + name, into: folder, patterns: patterns)
            }
        } else {
            try manager.createDirectory(at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
            try manager.copyItem(at: from, to: to)
        }
    }

    /// `swift package describe` in a build context assembled without `left`.
    static func describe(leavingOut left: Set<String> = []) async throws -> (status: Int32, output: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("build-context-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try assemble(into: folder, leavingOut: left)
        let run = try Spawned("/usr/bin/env", ["swift", "package", "describe", "--type", "json"], workingDirectory: folder.path)
        let status = try await run.wait(timeout: .seconds(120))
        return (status, String(decoding: run.standardOutput + run.standardError, as: UTF8.self))
    }

    @Test func theDockerfilesBuildContextIsAPackageSwiftPMAccepts() async throws {
        let copies = try Self.buildStageCopies()
        #expect(copies.contains { $0.sources.contains("Sources") }, "the build stage copies Sources")
        let described = try await Self.describe()
        #expect(described.status == 0, "\(described.output.suffix(2_000))")
        #expect(described.output.contains(#""name" : "echorelay""#))
    }

    /// The check above can fail: the context without the benchmark's HTTP floor, whose target
    /// the manifest declares, is refused the way issue 16 found the image's build refused.
    @Test func aContextMissingADeclaredTargetFolderIsRefused() async throws {
        let described = try await Self.describe(leavingOut: ["Benchmarks/http-floor"])
        #expect(described.status != 0)
        #expect(described.output.contains("invalid custom path"), "\(described.output.suffix(2_000))")
    }

    @Test func dockerignorePatternsLeaveOutWhatDockerLeavesOut() {
        let patterns = [".build", "*.sqlite*", ".env"]
        #expect(Self.ignored(".build/release/echorelay", patterns: patterns))
        #expect(Self.ignored("echorelay.sqlite-wal", patterns: patterns))
        #expect(!Self.ignored("Sources/EchoRelayCore/Secret.swift", patterns: patterns))
        #expect(!Self.ignored("Tests/x.sqlite", patterns: patterns), "Docker anchors patterns at the context's root")
    }
}
