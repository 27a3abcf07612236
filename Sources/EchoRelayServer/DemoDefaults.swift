/// What `echorelay serve --demo` accepts and `echorelay demo` uses: a stand-in identity
/// provider on a fixed loopback port with a fixed consumer key, so the two agree without
/// any set-up. Never for production: the demo provider confirms whatever it issued itself.
public enum DemoDefaults {
    public static let providerHost = "127.0.0.1"
    public static let providerPort = 8181
    public static let consumerKey = "echorelay-demo"
    public static let consumerSecret = "echorelay-demo-consumer-secret"
    /// The port of the demo's stand-in subscriber.
    public static let subscriberPort = 8282

    public static var providerHostAndPort: String { "\(providerHost):\(providerPort)" }
}

extension ServerConfiguration {
    /// `serve --demo`: adds the demo's stand-in provider to the allowed echo hosts (over
    /// http, with the demo consumer key unless one is set) and allows loopback subscribers.
    public mutating func enableDemo() {
        if echo.consumerKey.isEmpty { echo.consumerKey = DemoDefaults.consumerKey }
        if !echo.allowedHosts.contains(DemoDefaults.providerHostAndPort) { echo.allowedHosts.append(DemoDefaults.providerHostAndPort) }
        echo.allowHTTP = true
        delivery.allowPrivateSubscribers = true
    }
}
