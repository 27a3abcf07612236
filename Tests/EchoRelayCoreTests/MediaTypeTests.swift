import EchoRelayCore
import Testing

/// The ingest's `Content-Type` check, byte by byte.
@Suite struct MediaTypeTests {
    @Test(arguments: [
        "application/json", "Application/JSON", "application/json; charset=utf-8", "application/json;charset=UTF-8",
        "application/json; charset=\"utf-8\"", " application/json\t", "application/json; version=2",
        "application/json; version=2; charset=utf-8", "application/json;",
    ])
    func acceptsJSONInAnyCaseWithParametersAndAUTF8Charset(_ value: String) {
        #expect(MediaType.isJSON(value))
    }

    @Test(arguments: [
        "", "text/plain", "application/jsonx", "application/json-patch+json", "application/json; charset=latin1",
        "application/json; charset=utf-16", "application/json; charset=\"utf-8", "application / json", "json",
        "application/json\u{00A0}", "xapplication/json",
    ])
    func refusesOtherTypesAndOtherCharsets(_ value: String) {
        #expect(!MediaType.isJSON(value))
    }

    @Test func refusesAMissingHeader() {
        #expect(!MediaType.isJSON(nil))
    }
}
