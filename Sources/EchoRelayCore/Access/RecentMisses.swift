/// Digests of credentials that matched nothing, remembered for `lifetime`, so that the same
/// unknown credential presented again is refused without a database lookup. Only for
/// credentials that are random and made only by EchoRelay (tokens, console session keys): an
/// unknown one cannot become valid meanwhile, and a revocation still takes effect at once,
/// because only misses are remembered.
public final class RecentMisses: Sendable {
    public static let lifetime: Duration = .seconds(300)
    private let misses = BoundedCache<[UInt8], Bool>(capacity: 10_000)

    public init() {}

    public func contains(_ digest: [UInt8], now: ContinuousClock.Instant = .now) -> Bool {
        misses.value(for: digest, now: now) != nil
    }

    public func record(_ digest: [UInt8], now: ContinuousClock.Instant = .now) {
        misses.set(true, for: digest, expires: now + Self.lifetime, now: now)
    }
}
