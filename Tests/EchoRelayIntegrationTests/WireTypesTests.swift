import EchoRelayAPI
import Foundation
import Testing

/// The wire types' own rules: what they write for a missing value, what they accept, and that
/// those that carry a credential never print it. (OpenAPITests holds them to the schemas.)
@Suite struct WireTypesTests {
    /// `@Nullable` members are written as `null`, and read from `null` or from nothing; plain
    /// optional members are left out.
    @Test func nullableMembersAreWrittenAsNullAndReadWhenAbsent() throws {
        let user = API.User(user_id: "42", state: "active", phone_number: nil, last_sequence: 1,
                            last_event_at: "2026-01-31T12:00:00Z", updated_at: "2026-01-31T12:00:00Z")
        let written = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(user)) as? [String: Any])
        #expect(written["phone_number"] is NSNull)
        for body in [#"{"user_id":"42","state":"active","phone_number":null,"last_sequence":1,"last_event_at":"t","updated_at":"t"}"#,
                     #"{"user_id":"42","state":"active","last_sequence":1,"last_event_at":"t","updated_at":"t"}"#] {
            #expect(try JSONDecoder().decode(API.User.self, from: Data(body.utf8)).phone_number == nil)
        }
        #expect(try JSONDecoder().decode(API.User.self, from: Data(
            #"{"user_id":"42","state":"active","phone_number":"+15555550100","last_sequence":1,"last_event_at":"t","updated_at":"t"}"#.utf8
        )).phone_number == "+15555550100")

        let request = API.ReplayEventRequest(reason: "r", subscription_ids: nil)
        #expect(String(decoding: try JSONEncoder().encode(request), as: UTF8.self) == #"{"reason":"r"}"#)
    }

    /// A free-form member keeps integers apart from other numbers, and every JSON type.
    @Test func aJSONMemberRoundTrips() throws {
        let text = #"{"a":[1,1.5,"x",true,null,{"b":{}}]}"#
        let value = try JSONDecoder().decode(API.JSON.self, from: Data(text.utf8))
        #expect(value == .object(["a": .array([.integer(1), .number(1.5), .string("x"), .bool(true), .null,
                                               .object(["b": .object([:])])])]))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self) == text)
    }

    @Test func echoCredentialsAndASubscriptionsSecretPrintRedacted() {
        let echo = API.EchoCredentials(service_provider: "https://api.example/v", authorization: "OAuth oauth_token=\"t0k3n\"")
        #expect(!"\(echo)".contains("t0k3n") && "\(echo)".contains("<redacted>"))
        #expect(!String(reflecting: echo).contains("t0k3n"))
        let subscription = API.Subscription(
            id: "sub_1", url: "https://app.example/hook", event_types: ["token.rotated"], description: nil, ordered: true,
            enabled: true, disabled_reason: nil, created_at: "2026-01-31T12:00:00Z", updated_at: "2026-01-31T12:00:00Z",
            last_success_at: nil, failing_since: nil, secret: "whsec_c2VjcmV0c2VjcmV0")
        #expect(!"\(subscription)".contains("whsec_") && "\(subscription)".contains("<redacted>"), "\(subscription)")
    }
}
