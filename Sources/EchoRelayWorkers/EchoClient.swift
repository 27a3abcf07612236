import AsyncHTTPClient
import EchoRelayCore
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Sends OAuth Echo requests: GET with the echo header as `Authorization`, redirects not
/// followed, the answer capped at 64 KiB, and the whole exchange bounded by one timeout.
public final class EchoClient: Sendable {
    public static let maximumAnswerSize = 64 * 1024

    private let http: HTTPClient
    private let timeout: Duration

    public init(timeout: Duration) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .init(timeout), read: .init(timeout))
        )
        configuration.decompression = .disabled
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.timeout = timeout
    }

    public func send(_ target: EchoTarget) async -> EchoAnswer {
        var request = HTTPClientRequest(url: target.url)
        request.method = .GET
        request.headers.add(name: "Authorization", value: target.authorization.revealed)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "EchoRelay/\(EchoRelayInfo.version)")
        do {
            return try await withTimeout(timeout) { [http, request] in
                let response = try await http.execute(request, deadline: .now() + .init(self.timeout))
                let status = Int(response.status.code)
                do {
                    let body = try await response.body.collect(upTo: Self.maximumAnswerSize)
                    return .response(status: status, body: Array(body.readableBytesView))
                } catch is NIOTooManyBytesError {
                    // Too long to read is unreadable: the status stands, the body does not.
                    return .response(status: status, body: [])
                }
            }
        } catch let error as TimeoutError {
            return .noAnswer(error.description)
        } catch let error as HTTPClientError {
            return .noAnswer("\(error)")
        } catch {
            return .noAnswer(String(describing: type(of: error)))
        }
    }

    public func shutdown() async {
        try? await http.shutdown()
    }
}
