import EchoRelayCore
import Foundation
import Testing
import TestSupport

@Suite struct RFC3339Tests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", 0.0),
        ("2026-11-23T10:15:30Z", 1_795_428_930.0),
        ("2026-11-23t10:15:30z", 1_795_428_930.0),
        ("2026-11-23T11:15:30+01:00", 1_795_428_930.0),
        ("2026-11-23T05:45:30-04:30", 1_795_428_930.0),
        ("2026-11-23T10:15:30.25Z", 1_795_428_930.25),
        ("2024-02-29T00:00:00Z", 1_709_164_800.0),
        ("1969-12-31T23:59:59Z", -1.0),
    ])
    func parsesValidTimestamps(text: String, seconds: Double) throws {
        let date = try #require(RFC3339.parse(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.000_001)
    }

    @Test(arguments: [
        "", "2026-11-23", "2026-11-23T10:15:30", "2026-11-23 10:15:30Z", "2026-13-01T00:00:00Z",
        "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-11-23T24:00:00Z", "2026-11-23T10:60:00Z",
        "2026-11-23T10:15:30.Z", "2026-11-23T10:15:30+0100", "2026-11-23T10:15:30+24:00",
        "26-11-23T10:15:30Z", "2026-11-23T10:15:30Z ", "２０２６-11-23T10:15:30Z", "2026-11-23T10:15:30UTC",
    ])
    func refusesInvalidTimestamps(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test func formatsInUTCAndRoundTrips() async throws {
        try await offTheConcurrencyPool {
            #expect(RFC3339.format(Date(timeIntervalSince1970: 1_795_428_930)) == "2026-11-23T10:15:30Z")
            #expect(RFC3339.format(Date(timeIntervalSince1970: 1_795_428_930.5)) == "2026-11-23T10:15:30.5Z")
            #expect(RFC3339.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
            for seconds in stride(from: -100_000_000.0, to: 5_000_000_000.0, by: 86_399.123) {
                let date = Date(timeIntervalSince1970: seconds)
                let parsed = try #require(RFC3339.parse(RFC3339.format(date)))
                #expect(abs(parsed.timeIntervalSince1970 - seconds) < 0.000_001)
            }
        }
    }
}
