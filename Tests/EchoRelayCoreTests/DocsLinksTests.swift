import EchoRelayCore
import Foundation
import Testing

/// The README and docs/ are what someone who clones EchoRelay reads: every link in them must
/// lead to a file of the repository (and to a heading of it, when it names one) or to the web,
/// never outside the repository.
@Suite struct DocsLinksTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().standardizedFileURL

    /// The documents: the Markdown files at the top of the repository and in docs/.
    static func documents() throws -> [URL] {
        let manager = FileManager.default
        let top = try manager.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)
        let docs = try manager.contentsOfDirectory(at: root.appendingPathComponent("docs"), includingPropertiesForKeys: nil)
        return (top + docs).filter { $0.pathExtension == "md" }.sorted { $0.path < $1.path }
    }

    /// The text outside fenced code blocks and inline code, where links are links.
    static func prose(_ text: String) -> String {
        var inFence = false
        var kept: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inFence.toggle(); continue }
            if !inFence { kept.append(line) }
        }
        return kept.joined(separator: "\n").replacing(/`[^`\n]*`/, with: "")
    }

    /// The link targets of a document: `[text](target)` and `![alt](target)`.
    static func targets(_ text: String) -> [String] {
        prose(text).matches(of: /\]\(([^)\s]+)(?:\s+"[^"]*")?\)/).map { String($0.output.1) }
    }

    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens,
    /// and `-1`, `-2`… for repeats.
    static func anchors(_ text: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors: Set<String> = []
        var inFence = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("```") { inFence.toggle(); continue }
            guard !inFence, let match = line.wholeMatch(of: /#{1,6}\s+(.*)/) else { continue }
            let slug = String(match.output.1.lowercased().unicodeScalars.filter {
                CharacterSet.alphanumerics.contains($0) || $0 == " " || $0 == "-" || $0 == "_"
            }.map(Character.init)).replacing(" ", with: "-")
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
    }

    /// What is wrong with a link of `document` to `target`, or nil.
    static func problem(_ target: String, in document: URL) throws -> String? {
        if target.hasPrefix("https://") || target.hasPrefix("http://") || target.hasPrefix("mailto:") { return nil }
        let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0]), anchor = parts.count > 1 ? String(parts[1]) : nil
        if path.hasPrefix("/") || path.contains(":") { return "not a path inside the repository" }
        let file = path.isEmpty ? document : document.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
        guard file.path.hasPrefix(root.path + "/") else { return "points outside the repository" }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file.path, isDirectory: &isFolder) else { return "no such file" }
        if let anchor {
            guard !isFolder.boolValue, file.pathExtension == "md" else { return "an anchor into a file that is not Markdown" }
            guard try anchors(String(contentsOf: file, encoding: .utf8)).contains(anchor) else { return "no heading #\(anchor)" }
        }
        return nil
    }

    @Test func everyLinkOfTheReadmeAndTheDocsLeadsToAFileOrHeadingOfTheRepository() throws {
        let documents = try Self.documents()
        #expect(documents.contains { $0.lastPathComponent == "README.md" })
        #expect(documents.filter { $0.deletingLastPathComponent().lastPathComponent == "docs" }.count >= 4)
        var checked = 0
        for document in documents {
            let text = try String(contentsOf: document, encoding: .utf8)
            for target in Self.targets(text) {
                checked += 1
                if let problem = try Self.problem(target, in: document) {
                    Issue.record("\(document.lastPathComponent): (\(target)) \(problem)")
                }
            }
            // The team's folder beside the repository is not there for someone who clones it.
            #expect(!text.contains("../shared"), "\(document.lastPathComponent) mentions ../shared")
        }
        #expect(checked > 20, "the documents link to each other")
    }

    @Test func theCheckerFindsABrokenLinkAMissingHeadingAndAnEscape() throws {
        let readme = Self.root.appendingPathComponent("README.md")
        #expect(try Self.problem("docs/subscribers.md#verifying-a-delivery", in: readme) == nil)
        #expect(try Self.problem("docs/nothing-here.md", in: readme) == "no such file")
        #expect(try Self.problem("docs/subscribers.md#no-such-heading", in: readme) == "no heading #no-such-heading")
        #expect(try Self.problem("../shared/DESIGN.md", in: readme) == "points outside the repository")
        #expect(try Self.problem("/etc/passwd", in: readme) == "not a path inside the repository")
        #expect(Self.anchors("## The ingest contract: `POST /v1/events`\n## A\n## A") ==
                ["the-ingest-contract-post-v1events", "a", "a-1"])
        #expect(Self.targets("see [a](b.md) and `[c](d.md)`\n```\n[e](f.md)\n```\n![g](h.png)") == ["b.md", "h.png"])
    }
}

/// Whoever deploys EchoRelay knows its licence from the repository and from the API's own
/// description, and the two agree.
@Suite struct LicenceTests {
    @Test func theLicenceFileIsApache2AndTheOpenAPIDocumentSaysSo() throws {
        let root = DocsLinksTests.root
        let licence = try String(contentsOf: root.appendingPathComponent("LICENSE"), encoding: .utf8)
        #expect(licence.contains("Apache License") && licence.contains("Version 2.0, January 2004"))
        let openAPI = try String(contentsOf: root.appendingPathComponent("Sources/EchoRelayHTTP/OpenAPI/openapi.yaml"), encoding: .utf8)
        #expect(openAPI.contains("  license:\n    name: Apache-2.0\n    identifier: Apache-2.0\n"))
        let changelog = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        #expect(changelog.contains("## \(EchoRelayInfo.version)"), "the changelog has a section for this version")
    }
}
