import AsyncHTTPClient
import EchoRelayCore
import NIOCore
import NIOHTTP1

/// Sends OAuth Echo requests: GET with the echo header as `Authorization`, redirects not
/// followed, the answer capped at 64 KiB, and the whole exchange bounded by one timeout.
public final class EchoClient: Sendable {
    public static let maximumAnswerSize = 64 * 1024

    private let http: HTTPClient
    private let timeout: Duration

    /// - connectionsPerHost: echo requests in flight at once to one provider host, each on its
    ///   own connection: the verify worker's concurrency (AsyncHTTPClient's default of 8 held
    ///   every echo request beyond 8 in its queue, whatever `ECHORELAY_VERIFY_CONCURRENCY` said).
    public init(timeout: Duration, connectionsPerHost: Int) {
        self.http = HTTPClient(eventLoopGroupProvider: .singleton,
                               configuration: BoundedExchange.providerConfiguration(timeout: timeout, connectionsPerHost: connectionsPerHost))
        self.timeout = timeout
    }

    public func send(_ target: EchoTarget) async -> ProviderAnswer {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: target.authorization.revealed)
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "User-Agent", value: "EchoRelay/\(EchoRelayInfo.version)")
        do {
            let request = try HTTPClient.Request(url: target.url, method: .GET, headers: headers)
            return await BoundedExchange(http: http).providerAnswer(request, keep: Self.maximumAnswerSize, timeout: timeout)
        } catch {
            return .noAnswer(String(describing: type(of: error)))
        }
    }

    public func shutdown() async {
        try? await http.shutdown()
    }
}
