import EchoRelayCore
import Foundation

/// The delivery-time address check of each subscriber host, remembered for a few seconds: a
/// burst of deliveries to one subscriber resolves its name once, not once per delivery. An
/// allowed host is trusted for `allowedFor`; a refusal or a failure to resolve is kept for
/// the shorter `refusedFor`, so that a host whose DNS recovers is tried again soon.
///
/// The webhook then connects to the first checked address (`WebhookClient`), not to whatever
/// the name resolves to by then.
public struct AddressChecks: Sendable {
    public typealias Check = Result<[IPAddress], SubscriberURLProblem>

    public static let allowedFor: Duration = .seconds(5)
    public static let refusedFor: Duration = .seconds(1)

    private let results = BoundedCache<String, Check>(capacity: 512)
    private let now: @Sendable () -> ContinuousClock.Instant
    private let resolve: @Sendable (String) async -> Check

    /// `resolve` checks one host (by default `AddressResolver.check` with `policy`); `now` is
    /// the clock the entries expire by.
    public init(
        policy: SubscriberURLPolicy,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        resolve: (@Sendable (String) async -> Check)? = nil
    ) {
        self.now = now
        self.resolve = resolve ?? { host in await AddressResolver.check(host: host, policy: policy) }
    }

    public func check(host: String) async -> Check {
        if let known = results.value(for: host, now: now()) { return known }
        let result = await resolve(host)
        // A look-up cut short by cancellation says nothing about the host.
        guard !Task.isCancelled else { return result }
        let lifetime = (try? result.get()) == nil ? Self.refusedFor : Self.allowedFor
        let now = now()
        results.set(result, for: host, expires: now + lifetime, now: now)
        return result
    }
}

extension AddressChecks {
    /// The checks the delivery settings ask for: private subscribers refused but for the allow
    /// list, names looked up on `configuration.nameLookups`.
    init(_ configuration: DeliveryWorkerConfiguration) {
        let policy = SubscriberURLPolicy(allowPrivate: false, allowList: configuration.privateSubscribers)
        let lookUps = configuration.nameLookups
        self.init(policy: policy, resolve: { host in await AddressResolver.check(host: host, policy: policy, lookUps: lookUps) })
    }

    /// What a webhook to `url` may do: connect to the checked address, or be recorded as
    /// refused without sending. Checked before every send (DNS rebinding), at most every few
    /// seconds per host; nothing is checked for local testing (`allowPrivate`).
    func decision(for url: String, allowPrivate: Bool) async -> AddressDecision {
        guard !allowPrivate else { return .send(to: nil) }
        guard let host = URLComponents(string: url)?.host else {
            return .refused(.init(errorKind: .refusedAddress, error: "the subscription URL has no host"))
        }
        switch await check(host: host) {
        case .success(let addresses): return .send(to: addresses.first)
        case .failure(let problem):
            let kind: DeliveryErrorKind = problem.reason.contains("resolve") ? .dns : .refusedAddress
            return .refused(.init(errorKind: kind, error: "the subscriber's address \(problem.reason)"))
        }
    }
}

enum AddressDecision {
    /// Send, connecting to this address (nil: as the name resolves).
    case send(to: IPAddress?)
    /// Record this answer instead of sending.
    case refused(WebhookClient.Answer)
}
