import Foundation

/// How an attempt ended, as far as the retry policy cares.
public enum DeliveryAttemptResult: Sendable, Equatable {
    case success
    /// `410 Gone`: the endpoint says it will never take this again.
    case gone
    /// Anything else. `retryAfter` comes from a 429 or 503 answer's `Retry-After`.
    case failed(retryAfter: Duration?)
}

/// What follows an attempt (docs/subscribers.md): N delays mean N retries, N + 1 tries,
/// each delay ±`jitter`; a `Retry-After` replaces the next delay, capped, and still counts
/// as a try; after the last try the delivery is dead.
public struct DeliveryRetryPolicy: Sendable {
    public static let defaultSchedule: [Duration] = [
        .seconds(5), .seconds(300), .seconds(1800), .seconds(7200), .seconds(18_000), .seconds(36_000), .seconds(36_000),
    ]

    public var schedule: [Duration]
    public var jitter: Double
    public var retryAfterCap: Duration

    public init(schedule: [Duration] = defaultSchedule, jitter: Double = 0.1, retryAfterCap: Duration = .seconds(3600)) {
        self.schedule = schedule
        self.jitter = jitter
        self.retryAfterCap = retryAfterCap
    }

    /// `attempts` counts the tries so far, this one included.
    public func next(after result: DeliveryAttemptResult, attempts: Int, random: inout some RandomNumberGenerator) -> DeliveryNext {
        switch result {
        case .success:
            return .delivered
        case .gone:
            return .dead(disableSubscription: "the endpoint answered 410 Gone")
        case .failed(let retryAfter):
            guard attempts <= schedule.count else { return .dead(disableSubscription: nil) }
            if let retryAfter { return .retry(after: min(retryAfter, retryAfterCap)) }
            let base = schedule[attempts - 1]
            let factor = jitter > 0 ? Double.random(in: (1 - jitter)...(1 + jitter), using: &random) : 1
            return .retry(after: base * factor)
        }
    }

    /// Parses `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
    public static func retryAfter(_ value: String, now: Date = Date()) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(text), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: text) else { return nil }
        return .milliseconds(Int64(max(0, date.timeIntervalSince(now)) * 1000))
    }
}
