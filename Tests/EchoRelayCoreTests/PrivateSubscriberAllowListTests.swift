import EchoRelayCore
import Testing

/// `ECHORELAY_PRIVATE_SUBSCRIBERS`: an internal service network may receive deliveries over
/// https while every other private address stays refused.
@Suite struct PrivateSubscriberAllowListTests {
    static let list = try! PrivateSubscriberAllowList(parsing: "Hooks.Internal, 10.20.0.0/16,fd00:1::/64, 192.168.7.9")
    static let policy = SubscriberURLPolicy(allowPrivate: false, allowList: list)

    func accepted(_ url: String) -> String? { try? Self.policy.check(url).get() }

    func refusal(_ url: String) -> String? {
        if case .failure(let problem) = Self.policy.check(url) { return problem.reason }
        return nil
    }

    @Test func listedHostsAndRangesAreAllowedOverHTTPS() {
        #expect(accepted("https://hooks.internal/echorelay") == "https://hooks.internal/echorelay")
        #expect(accepted("https://10.20.3.4:8443/h") == "https://10.20.3.4:8443/h")
        #expect(accepted("https://[fd00:1::7]/h") == "https://[fd00:1::7]/h")
        #expect(accepted("https://192.168.7.9/") == "https://192.168.7.9/")
        #expect(Self.policy.allows(.v4(0x0A14_FFFF)), "the last address of 10.20.0.0/16, as resolved at delivery")
    }

    @Test func everythingElsePrivateStaysRefusedAndPlainHTTPToo() {
        #expect(refusal("http://hooks.internal/") == "must use https")
        #expect(refusal("https://other.internal/") == "points to a local-only name (*.internal)")
        #expect(refusal("https://10.21.0.1/") == "points to a private address (10.0.0.0/8)")
        #expect(refusal("https://192.168.7.10/") == "points to a private address (192.168.0.0/16)")
        #expect(refusal("https://127.0.0.1/") == "points to a loopback address (127.0.0.0/8)")
        #expect(refusal("https://[fd00:2::1]/") != nil)
        #expect(accepted("https://api.example.com/") != nil, "public hosts are as before")
    }

    @Test(arguments: [
        ("10.20.0.1/16", "\"10.20.0.1/16\" has bits set past its /16 prefix; write the network's first address"),
        ("0.0.0.0/0", "\"0.0.0.0/0\" would allow every address; for local testing set ECHORELAY_ALLOW_PRIVATE_SUBSCRIBERS=1 instead"),
        ("10.0.0.0/33", "\"10.0.0.0/33\" is not a CIDR range: the prefix must be a whole number from 1 to 32"),
        ("fd00::/129", "\"fd00::/129\" is not a CIDR range: the prefix must be a whole number from 1 to 128"),
        ("10.0.0/8", "\"10.0.0/8\" is not a CIDR range: \"10.0.0\" is not an IP address"),
        ("*.internal", "\"*.internal\": wildcards are not supported; list each host, or the address range its hosts are in"),
        ("hooks.internal,,10.0.0.0/8", "has an empty entry (two commas, or one at an end)"),
        ("hooks_internal!", "\"hooks_internal!\" is neither a host name, an IP address nor a CIDR range such as 10.20.0.0/16"),
    ])
    func aBadEntryIsRefusedSayingWhy(text: String, reason: String) {
        #expect(throws: AllowListError(reason)) { try PrivateSubscriberAllowList(parsing: text) }
    }

    @Test func anEmptyListAllowsNothingPrivate() {
        let policy = SubscriberURLPolicy(allowPrivate: false)
        #expect(policy.allowList.isEmpty)
        #expect((try? policy.check("https://hooks.internal/").get()) == nil)
    }
}
