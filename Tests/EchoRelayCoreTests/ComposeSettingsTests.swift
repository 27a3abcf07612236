import Foundation
import Testing

/// `docker-compose.yml` is how many will first deploy EchoRelay: the settings it requires are
/// the ones the README says it requires, and every other setting of the README's table
/// reaches the container, but for those meant only for trying EchoRelay out on one machine.
@Suite struct ComposeSettingsTests {
    static let root = DocsLinksTests.root
    static let forTryingOutOnly: Set = ["ECHORELAY_DEMO", "ECHORELAY_ECHO_ALLOW_HTTP", "ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS",
                                        "ECHORELAY_SET_ALLOW_HTTP"]

    /// The environment variables of the README's configuration table.
    static func documentedSettings() throws -> Set<String> {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        return Set(readme.split(separator: "\n").compactMap { line -> String? in
            guard let match = line.firstMatch(of: /^\| `--[a-z0-9-]+` \| `(ECHORELAY_[A-Z0-9_]+)(=1)?` \|/) else { return nil }
            return String(match.output.1)
        })
    }

    /// The echorelay service's environment: each variable, and whether compose requires it (`:?`).
    static func composeEnvironment() throws -> [String: Bool] {
        let compose = try String(contentsOf: root.appendingPathComponent("docker-compose.yml"), encoding: .utf8)
        var environment: [String: Bool] = [:]
        for line in compose.split(separator: "\n") {
            guard let match = line.firstMatch(of: /^      (ECHORELAY_[A-Z0-9_]+): (.*)$/) else { continue }
            environment[String(match.output.1)] = match.output.2.contains(":?")
        }
        return environment
    }

    @Test func everyDeploymentSettingReachesTheContainer() throws {
        let documented = try Self.documentedSettings(), passed = Set(try Self.composeEnvironment().keys)
        #expect(documented.count > 20, "the README's table was read")
        #expect(documented.subtracting(Self.forTryingOutOnly).subtracting(passed).isEmpty,
                "settings compose does not pass: \(documented.subtracting(Self.forTryingOutOnly).subtracting(passed).sorted())")
        #expect(passed.subtracting(documented).isEmpty, "compose sets undocumented variables: \(passed.subtracting(documented).sorted())")
        #expect(passed.isDisjoint(with: Self.forTryingOutOnly))
    }

    @Test func theSettingsComposeRequiresAreTheOnesTheReadmeNames() throws {
        let required = Set(try Self.composeEnvironment().filter(\.value).keys)
        #expect(required == ["ECHORELAY_INGEST_SECRETS", "ECHORELAY_ADMIN_TOKEN", "ECHORELAY_CONSUMER_KEY", "ECHORELAY_ECHO_ALLOWED_HOSTS"])
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let paragraph = try #require(readme.components(separatedBy: "\n\n").first { $0.contains("`docker compose up`") })
        let named = Set(paragraph.matches(of: /`(ECHORELAY_[A-Z0-9_]+)` and|`(ECHORELAY_[A-Z0-9_]+)`,|`(ECHORELAY_[A-Z0-9_]+)` set/).compactMap {
            ($0.output.1 ?? $0.output.2 ?? $0.output.3).map(String.init)
        })
        #expect(named == required, "the README's compose sentence names \(named.sorted())")
    }
}
