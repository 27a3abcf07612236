import EchoRelayCore

/// What `echorelay serve --demo` accepts and `echorelay demo` uses: a stand-in identity
/// provider on a fixed loopback port with a fixed consumer key, so the two agree without
/// any set-up. Never for production: the demo provider confirms whatever it issued itself.
public enum DemoDefaults {
    public static let providerHost = "127.0.0.1"
    public static let providerPort = 8181
    public static let consumerKey = "echorelay-demo"
    public static let consumerSecret = "echorelay-demo-consumer-secret"
    /// EchoRelay's client at the stand-in authorization server, which also issues the demo
    /// app's tokens to it (`echorelay demo --provider oauth2`).
    public static let oauth2ClientID = "echorelay-demo"
    public static let oauth2ClientSecret = "echorelay-demo-client-secret"
    /// The port of the demo's stand-in subscriber.
    public static let subscriberPort = 8282

    public static var providerHostAndPort: String { "\(providerHost):\(providerPort)" }
    public static var introspectionURL: String { "http://\(providerHostAndPort)/oauth2/introspect" }
    public static var userInfoURL: String { "http://\(providerHostAndPort)/oauth2/userinfo" }
}

extension ServerConfiguration {
    /// `serve --demo`: adds the demo's stand-in provider to the allowed echo hosts (over
    /// http, with the demo consumer key unless one is set), re-verifies OAuth 2 events with it
    /// unless another authorization server is set, and allows loopback subscribers.
    public mutating func enableDemo() {
        if echo.consumerKey.isEmpty { echo.consumerKey = DemoDefaults.consumerKey }
        if !echo.allowedHosts.contains(DemoDefaults.providerHostAndPort) { echo.allowedHosts.append(DemoDefaults.providerHostAndPort) }
        echo.allowHTTP = true
        if oauth2 == nil {
            oauth2 = OAuth2Configuration(
                introspectionURL: DemoDefaults.introspectionURL, clientID: DemoDefaults.oauth2ClientID,
                clientSecret: Secret(DemoDefaults.oauth2ClientSecret), userInfoURL: DemoDefaults.userInfoURL, allowHTTP: true
            )
        }
        delivery.allowPrivateSubscribers = true
    }
}
