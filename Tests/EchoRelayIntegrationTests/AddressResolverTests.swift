import EchoRelayCore
import EchoRelayWorkers
import Testing

/// The delivery-time address check. Only loopback names, literals and `.invalid` are looked
/// up: the test machine has no DNS for public names and must not send traffic off the host.
@Suite struct AddressResolverTests {
    static let strict = SubscriberURLPolicy(allowPrivate: false)
    static let permissive = SubscriberURLPolicy(allowPrivate: true)

    @Test func localhostResolvesToLoopbackAndIsRefused() async throws {
        let refused = await AddressResolver.check(host: "localhost", policy: Self.strict)
        guard case .failure(let problem) = refused else { Issue.record("localhost was allowed: \(refused)"); return }
        #expect(problem.reason.hasPrefix("points to the loopback address") || problem.reason.hasPrefix("points to a loopback address"))
        #expect(!problem.reason.contains("resolve"))

        let addresses = try await AddressResolver.check(host: "localhost", policy: Self.permissive).get()
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { $0 == .v4(0x7F00_0001) || $0 == IPAddress.parse("::1") })
        #expect(Set(addresses).count == addresses.count)
    }

    /// A host on ECHORELAY_PRIVATE_SUBSCRIBERS is trusted wherever it resolves; a listed range
    /// admits the addresses in it.
    @Test func aListedPrivateHostOrRangeIsAllowedAtDelivery() async throws {
        let byName = SubscriberURLPolicy(allowPrivate: false, allowList: try PrivateSubscriberAllowList(parsing: "localhost"))
        #expect(try await !AddressResolver.check(host: "localhost", policy: byName).get().isEmpty)
        let byRange = SubscriberURLPolicy(allowPrivate: false, allowList: try PrivateSubscriberAllowList(parsing: "127.0.0.0/8,::1"))
        #expect(try await !AddressResolver.check(host: "127.0.0.1", policy: byRange).get().isEmpty)
        let elsewhere = SubscriberURLPolicy(allowPrivate: false, allowList: try PrivateSubscriberAllowList(parsing: "10.0.0.0/8"))
        #expect((try? await AddressResolver.check(host: "localhost", policy: elsewhere).get()) == nil, "loopback is not in 10.0.0.0/8")
    }

    @Test(arguments: [
        ("127.0.0.1", "points to a loopback address (127.0.0.0/8)"),
        ("10.0.0.1", "points to a private address (10.0.0.0/8)"),
        ("[::1]", "points to the loopback address (::1/128)"),
        ("::1", "points to the loopback address (::1/128)"),
        ("[::ffff:127.0.0.1]", "points to an IPv4-mapped address (::ffff:0:0/96)"),
    ])
    func literalsAreCheckedWithoutALookUp(host: String, reason: String) async throws {
        #expect(await AddressResolver.check(host: host, policy: Self.strict) == .failure(SubscriberURLProblem(reason)))
        let address = try #require(IPAddress.parse(host))
        #expect(await AddressResolver.check(host: host, policy: Self.permissive) == .success([address]))
    }

    @Test func publicLiteralIsAllowedWithoutALookUp() async {
        // A literal is parsed, never sent to the resolver or connected to.
        #expect(await AddressResolver.check(host: "93.184.216.34", policy: Self.strict) == .success([.v4(0x5DB8_D822)]))
        #expect(await AddressResolver.check(host: "[2606:2800:220:1::1]", policy: Self.strict)
            == .success([IPAddress.parse("2606:2800:220:1::1")!]))
    }

    @Test func numericNotationsResolveToWhatTheyMean() async {
        // getaddrinfo reads these as 127.0.0.1 (inet_aton): the address check still sees loopback.
        for host in ["2130706433", "0x7f.1", "017700000001", "127.1"] {
            let result = await AddressResolver.check(host: host, policy: Self.strict)
            #expect(result == .failure(SubscriberURLProblem("points to a loopback address (127.0.0.0/8)")), "\(host)")
        }
    }

    @Test func nameThatDoesNotResolveIsADNSFailure() async {
        let result = await AddressResolver.check(host: "nonexistent.invalid", policy: Self.permissive)
        guard case .failure(let problem) = result else { Issue.record("resolved: \(result)"); return }
        #expect(problem.reason.hasPrefix("does not resolve"))
    }

    @Test(arguments: ["", "bad host", "evil.example\u{0}.localhost", "fe80::1%eth0", "[::1", "a/b", ".example.com"])
    func malformedHostsNeverReachTheResolver(host: String) async {
        let result = await AddressResolver.check(host: host, policy: Self.permissive)
        #expect(result == .failure(SubscriberURLProblem("has an invalid host name")))
    }
}

@Suite struct AddressResolverNameTests {
    @Test func internationalNamesAreLookedUpInPunycode() async {
        // What DeliveryWorker passes today (URLComponents.host decodes xn-- names); .invalid
        // never resolves, so only the shape of the failure is checked.
        let result = await AddressResolver.check(host: "bücher.invalid", policy: SubscriberURLPolicy(allowPrivate: false))
        guard case .failure(let problem) = result else { Issue.record("resolved: \(result)"); return }
        #expect(problem.reason.hasPrefix("does not resolve"))
    }
}

@Suite struct AddressResolverWaitingTests {
    @Test func cancelledTaskStopsWaiting() async {
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await AddressResolver.check(host: "localhost", policy: SubscriberURLPolicy(allowPrivate: true))
        }
        #expect(await task.value == .failure(SubscriberURLProblem("does not resolve (the look-up was cancelled)")))
    }

    @Test func timeoutEndsTheWait() async {
        // With no time at all the answer is either the timeout or (rarely) the look-up itself.
        let result = await AddressResolver.check(host: "localhost", policy: SubscriberURLPolicy(allowPrivate: true), timeout: .zero)
        switch result {
        case .failure(let problem): #expect(problem.reason.hasPrefix("does not resolve (no DNS answer within"))
        case .success(let addresses): #expect(addresses.contains(.v4(0x7F00_0001)))
        }
    }

    @Test func manyConcurrentLookUpsAllAnswer() async {
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<200 {
                group.addTask { (try? await AddressResolver.check(host: "localhost", policy: SubscriberURLPolicy(allowPrivate: true)).get()) != nil }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(results == 200)
    }
}
