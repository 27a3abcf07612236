import EchoRelayCore
import Testing
import TestSupport

/// The command line's help names the event types from the registry, each with its descriptor's
/// summary, so a type added there is documented there.
@Suite struct EventTypeHelpTests {
    @Test func eventsListHelpNamesEveryRegisteredTypeWithItsSummary() async throws {
        let (status, help, errors) = try await ChildProcess.run(["events", "list", "--help"])
        #expect(status == 0, "events list --help: \(errors)")
        for type in EventType.allCases {
            #expect(help.contains("\(type.rawValue): \(type.descriptor.summary)"), "\(type) is not in:\n\(help)")
        }
        let flowing = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")  // help wraps its lines
        #expect(flowing.contains(EventType.namesInProse), "the --type option names the types")
    }
}
