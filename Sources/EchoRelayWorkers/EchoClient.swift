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
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .init(timeout), read: .init(timeout))
        )
        configuration.decompression = .disabled
        configuration.connectionPool.idleTimeout = .seconds(4)  // before the provider's keep-alive ends (see WebhookClient)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.timeout = timeout
    }

    public func send(_ target: EchoTarget) async -> EchoAnswer {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: target.authorization.revealed)
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "User-Agent", value: "EchoRelay/\(EchoRelayInfo.version)")
        do {
            let request = try HTTPClient.Request(url: target.url, method: .GET, headers: headers)
            let answer = try await BoundedExchange(http: http).send(request, keep: Self.maximumAnswerSize, timeout: timeout)
            // Too long to read is unreadable: the status stands, the body does not.
            return .response(status: answer.status, body: answer.truncated ? [] : answer.body)
        } catch let error as HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout { return .noAnswer("timed out after \(timeout)") }
            return .noAnswer("\(error)")
        } catch {
            return .noAnswer(String(describing: type(of: error)))
        }
    }

    public func shutdown() async {
        try? await http.shutdown()
    }
}
