import EchoRelayStandIns
import Foundation

// What only tests ask of the stand-ins: waits for their traffic, and readings of it.

extension StandInProvider {
    /// Waits until at least `count` requests have been recorded; returns all of them. The
    /// relay can give up on a request (a timeout) before a busy machine lets this server
    /// record it, so a count is read after this wait, not straight after an outcome.
    @discardableResult
    public func waitForRequests(count: Int, within limit: Duration) async throws -> [RecordedRequest] {
        try await waitUntil(count: count, within: limit, of: { requests }) { received in
            "the provider received \(received.count) of \(count) requests within \(limit)"
        }
    }

    public var twitterURL: String { "http://\(host)/1.1/account/verify_credentials.json" }
}

extension StandInSubscriber {
    /// Waits until at least `count` deliveries have arrived; returns all of them.
    /// Throws `StandInError` saying what did arrive when `within` runs out first.
    @discardableResult
    public func waitForDeliveries(count: Int, within limit: Duration) async throws -> [ReceivedDelivery] {
        try await waitUntil(count: count, within: limit, of: { deliveries }) { received in
            let seen = received.map { "\($0.path) \($0.webhookID ?? "-")" }.joined(separator: ", ")
            return "the subscriber received \(received.count) of \(count) deliveries within \(limit): [\(seen)]"
        }
    }
}

extension StandInSubscriber.ReceivedDelivery {
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// Reads `items` every 20 ms until there are at least `count`; returns them. Throws
/// `StandInError` with the text `failure` gives for the last reading when `limit` runs out.
private func waitUntil<Item>(
    count: Int, within limit: Duration, of items: () -> [Item], failure: ([Item]) -> String
) async throws -> [Item] {
    let deadline = ContinuousClock.now + limit
    while true {
        let received = items()
        if received.count >= count { return received }
        guard ContinuousClock.now < deadline else { throw StandInError(failure(received)) }
        try await Task.sleep(for: .milliseconds(20))
    }
}
