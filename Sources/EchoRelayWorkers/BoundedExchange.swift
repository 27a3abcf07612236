import AsyncHTTPClient
import EchoRelayCore
import NIOCore
import NIOHTTP1
import Synchronization

/// One outbound HTTP exchange bounded by one deadline, without a timer task of our own.
///
/// AsyncHTTPClient's async `execute(_:deadline:)` stops its deadline once the response head
/// arrives, so a peer that answers at once and then trickles its body would hold the caller
/// past it. Its delegate API keeps the deadline until the whole response is read, body
/// included, so the exchanges here use that: status, headers and the first `keep` bytes of
/// the body are kept, and the rest is read and dropped so that the connection can be reused.
struct BoundedExchange: Sendable {
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        /// At most `keep` bytes: the start of the body.
        var body: [UInt8]
        /// True when the body was longer than `keep`.
        var truncated: Bool
    }

    let http: HTTPClient

    /// Sends `request` and waits for the whole answer until `timeout` has passed, when it fails
    /// with `HTTPClientError.deadlineExceeded`. Cancelling the calling task cancels the request.
    func send(_ request: HTTPClient.Request, keep: Int, timeout: Duration) async throws -> Answer {
        let task = http.execute(request: request, delegate: Collector(keep: keep), deadline: .now() + .init(timeout))
        return try await withTaskCancellationHandler {
            try await task.futureResult.get()
        } onCancel: {
            task.cancel()
        }
    }

    /// Called on the connection's event loop, one part after another; the lock only makes
    /// the hand-over to `didFinishRequest` plainly safe.
    private final class Collector: HTTPClientResponseDelegate {
        typealias Response = Answer

        private let keep: Int
        private let answer = Mutex(Answer(status: 0, headers: [:], body: [], truncated: false))

        init(keep: Int) {
            self.keep = keep
        }

        func didReceiveHead(task: HTTPClient.Task<Answer>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
            answer.withLock {
                $0.status = Int(head.status.code)
                $0.headers = head.headers
            }
            return task.eventLoop.makeSucceededVoidFuture()
        }

        func didReceiveBodyPart(task: HTTPClient.Task<Answer>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            answer.withLock { answer in
                let room = keep - answer.body.count
                if buffer.readableBytes > room { answer.truncated = true }
                if room > 0 { answer.body += buffer.readableBytesView.prefix(room) }
            }
            return task.eventLoop.makeSucceededVoidFuture()
        }

        func didFinishRequest(task: HTTPClient.Task<Answer>) throws -> Answer {
            answer.withLock { $0 }
        }
    }
}

extension BoundedExchange {
    /// The settings of a client for an identity provider: redirects not followed (a provider
    /// that redirects is refused, not followed), no decompression, the connect and read
    /// timeouts of `timeout`, and up to `connectionsPerHost` connections at once.
    static func providerConfiguration(timeout: Duration, connectionsPerHost: Int) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .init(timeout), read: .init(timeout))
        )
        configuration.decompression = .disabled
        configuration.connectionPool.idleTimeout = .seconds(4)  // before the provider's keep-alive ends (see WebhookClient)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        return configuration
    }

    /// Sends a request to a provider and reads its answer, at most `keep` bytes of it (a longer
    /// body is unreadable: the status stands, the body does not), within `timeout`. Any failure
    /// is `.noAnswer`, worth a retry; its text names no header, so no credential.
    func providerAnswer(_ request: HTTPClient.Request, keep: Int, timeout: Duration) async -> ProviderAnswer {
        do {
            let answer = try await send(request, keep: keep, timeout: timeout)
            return .response(status: answer.status, body: answer.truncated ? [] : answer.body)
        } catch let error as HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout { return .noAnswer("timed out after \(timeout)") }
            return .noAnswer("\(error)")
        } catch {
            return .noAnswer(String(describing: type(of: error)))
        }
    }
}
