import EchoRelayAPI
import Testing

/// The wire types that carry a credential never print it.
@Suite struct WireSecretsTests {
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
