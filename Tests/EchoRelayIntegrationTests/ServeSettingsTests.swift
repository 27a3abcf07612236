import EchoRelayCore
import EchoRelayServer
import Foundation
import Testing
import TestSupport

/// `serve`'s settings are one table (`ServeSettings` in the `echorelay` target) that makes its
/// options and `serve --help`: the README's configuration table agrees with what the built
/// binary's help says, setting by setting (flag, environment variable, default).
@Suite struct ServeSettingsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Described: Equatable, CustomStringConvertible {
        var variable: String
        var isSwitch: Bool
        /// Plain text: no backticks, no parentheses around the whole; nil for a switch.
        var defaultText: String?
        var description: String { "\(variable)\(isSwitch ? "=1" : "") default \(defaultText ?? "off")" }
    }

    /// `| `--flag` | `VARIABLE` | default | meaning |` rows of the README, by flag.
    static func readmeTable() throws -> [String: Described] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        var table: [String: Described] = [:]
        for line in readme.split(separator: "\n") {
            guard let row = line.firstMatch(of: #/^\| `--([a-z0-9-]+)` \| `(ECHORELAY_[A-Z0-9_]+)(=1)?` \| (.*?) \| /#) else { continue }
            let isSwitch = row.output.3 != nil
            let cell = String(row.output.4)
            #expect(!isSwitch || cell == "off", "a switch's default is off: \(line)")
            table[String(row.output.1)] = Described(variable: String(row.output.2), isSwitch: isSwitch,
                                                    defaultText: isSwitch ? nil : plain(cell))
        }
        return table
    }

    static func plain(_ markdown: String) -> String {
        let text = markdown.filter { $0 != "`" }
        return text.hasPrefix("(") && text.hasSuffix(")") ? String(text.dropFirst().dropLast()) : text
    }

    /// Each option of `echorelay serve --help`, by flag, from the `(env: …)` that ends its help.
    static func helpTable() async throws -> [String: Described] {
        let (status, help, errors) = try await ChildProcess.run(["serve", "--help"])
        #expect(status == 0, "serve --help: \(errors)")
        let options = try #require(help.components(separatedBy: "\nOPTIONS:\n").last)
        var table: [String: Described] = [:]
        for block in ("\n" + options).components(separatedBy: "\n  --").dropFirst() {
            let text = block.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            let flag = String(text.prefix { $0 != " " })
            guard let env = text.firstMatch(of: /\(env: (ECHORELAY_[A-Z0-9_]+)(=1)?(?:, default: (.*))?\)$/) else {
                #expect(["help", "version"].contains(flag), "--\(flag) does not say its variable: \(text)")
                continue
            }
            table[flag] = Described(variable: String(env.output.1), isSwitch: env.output.2 != nil,
                                    defaultText: env.output.3.map(String.init))
        }
        return table
    }

    @Test func theReadmesConfigurationTableIsWhatServeHelpSays() async throws {
        let readme = try Self.readmeTable(), help = try await Self.helpTable()
        #expect(readme.count > 30, "the README's table was read")
        #expect(Set(readme.keys) == Set(help.keys),
                "in the README only: \(Set(readme.keys).subtracting(help.keys).sorted()); in --help only: \(Set(help.keys).subtracting(readme.keys).sorted())")
        for (flag, described) in help.sorted(by: { $0.key < $1.key }) {
            #expect(readme[flag] == described, "--\(flag): README \(readme[flag].map { "\($0)" } ?? "none"), --help \(described)")
        }
    }

    /// `ServerConfiguration`'s own defaults, which the in-process tests run with, are the ones
    /// `serve --help` documents (serve always passes its table's values).
    @Test func theConfigurationsDefaultsAreTheDocumentedOnes() async throws {
        let help = try await Self.helpTable()
        func documented(_ flag: String) -> String { help[flag]?.defaultText ?? "(none for --\(flag))" }
        let configuration = ServerConfiguration(databaseURL: nil, ingestSecrets: [], adminToken: nil,
                                                echo: EchoConfiguration(consumerKey: "", allowedHosts: []))
        #expect(documented("host") == configuration.host)
        #expect(documented("port") == String(configuration.port))
        #expect(documented("role") == configuration.role.rawValue)
        #expect(documented("backlog-limit") == configuration.backlogLimit.map(String.init))
        #expect(DurationText.parse(documented("request-timeout")) == configuration.requestTimeout)
        #expect(DurationText.parse(documented("shutdown-grace")) == configuration.shutdownGrace)
        let echo = configuration.echo, delivery = configuration.delivery
        #expect(DurationText.parse(documented("echo-timeout")) == echo.timeout)
        #expect(DurationText.parseList(documented("echo-retry-schedule")) == echo.retrySchedule)
        #expect(DurationText.parse(documented("lease")) == echo.lease)
        #expect(documented("verify-concurrency") == String(echo.concurrency))
        #expect(DurationText.parse(documented("delivery-timeout")) == delivery.timeout)
        #expect(DurationText.parseList(documented("retry-schedule")) == delivery.retrySchedule)
        #expect(DurationText.parse(documented("disable-after")) == delivery.disableAfter)
        #expect(documented("delivery-concurrency") == String(delivery.concurrency))
        #expect(documented("subscription-concurrency") == String(delivery.perSubscriptionConcurrency))
        #expect(documented("replay-rate") == String(delivery.replayRate))
    }
}
