import AsyncHTTPClient
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
