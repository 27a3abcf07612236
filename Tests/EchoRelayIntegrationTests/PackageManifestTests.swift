import Foundation
import Testing

/// Every module a target imports is declared among its dependencies in `Package.swift` (an
/// undeclared one builds only while another target happens to bring it in), and no module
/// re-exports another's names (`@_exported` hides where a type comes from).
@Suite struct PackageManifestTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The toolchain's own modules, which no manifest declares.
    static let toolchain: Set<String> = [
        "Foundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Synchronization", "Testing", "XCTest",
        "Glibc", "Musl", "Darwin", "_Concurrency",
    ]

    struct Target {
        let name: String
        let folder: String
        /// Every quoted name in its declaration: its target and product dependencies among them.
        let declared: Set<String>
    }

    static func targets() throws -> [Target] {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let declarations = manifest.split(separator: #/\.(?:target|executableTarget|testTarget)\(/#).dropFirst()
        return try declarations.map { declaration in
            let name = try #require(declaration.firstMatch(of: #/name:\s*"([^"]+)"/#)).output.1
            let path = declaration.firstMatch(of: #/path:\s*"([^"]+)"/#).map { String($0.output.1) }
            let sources = FileManager.default.fileExists(atPath: root.appendingPathComponent("Sources/\(name)").path)
            return Target(name: String(name), folder: path ?? (sources ? "Sources/\(name)" : "Tests/\(name)"),
                          declared: Set(declaration.matches(of: #/"([^"]+)"/#).map { String($0.output.1) }))
        }
    }

    /// The top-level import lines of each Swift file below `folder` (embedded scripts, indented
    /// inside string literals, are not Swift imports).
    static func importLines(in folder: String) throws -> [(file: String, line: Substring)] {
        let base = root.appendingPathComponent(folder)
        let files = try #require(FileManager.default.enumerator(atPath: base.path)).compactMap { $0 as? String }
        return try files.filter { $0.hasSuffix(".swift") }.flatMap { file in
            try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
                .split(separator: "\n").filter { $0.contains(#/^(@\w+ )?import /#) }.map { ("\(folder)/\(file)", $0) }
        }
    }

    @Test func everyImportedModuleIsADeclaredDependencyOfItsTarget() throws {
        let targets = try Self.targets()
        #expect(targets.count >= 10, "the manifest's targets were not found: \(targets.map(\.name))")
        for target in targets {
            let lines = try Self.importLines(in: target.folder)
            let files = FileManager.default.enumerator(atPath: Self.root.appendingPathComponent(target.folder).path)?
                .compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
            #expect(!files.isEmpty, "\(target.name) has no Swift file in \(target.folder)")
            for (file, line) in lines {
                let module = try #require(line.firstMatch(of: #/import (?:(?:struct|enum|class|protocol|func|typealias) )?(\w+)/#)).output.1
                #expect(Self.toolchain.contains(String(module)) || target.declared.contains(String(module)) || module == target.name,
                        "\(file) imports \(module), which Package.swift does not declare for \(target.name)")
            }
        }
    }

    @Test func noModuleReExportsAnother() throws {
        for target in try Self.targets() {
            for (file, line) in try Self.importLines(in: target.folder) where line.hasPrefix("@_exported") {
                Issue.record("\(file): \(line)")
            }
        }
    }
}
