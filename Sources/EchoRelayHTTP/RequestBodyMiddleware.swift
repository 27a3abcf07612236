import Hummingbird
import Logging
import NIOCore

/// Reads every request body in full before a route runs, so no route waits on a client and
/// every route has the same limits: a body over `EchoRelayRequestContext.maxBodySize` is
/// refused with `413`, one that has not arrived within `timeout` with `408`. Either way the
/// connection is closed soon after, so a client cannot keep trickling or streaming into it.
/// (A client slow to send its head is cut off by the server's idle timeout.)
struct RequestBodyMiddleware: RouterMiddleware {
    typealias Context = EchoRelayRequestContext
    let timeout: Duration

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let limit = Context.maxBodySize
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit {
            throw refusing(context, Self.tooLarge)
        }
        // Read part by part rather than under a cancelling timeout: cancelling the read would
        // end the connection before the answer is written. A client that stops sending
        // altogether is cut off by the server's idle timeout instead.
        var body: ByteBuffer?
        let deadline = ContinuousClock.now + timeout
        for try await part in request.body {
            guard (body?.readableBytes ?? 0) + part.readableBytes <= limit else { throw refusing(context, Self.tooLarge) }
            // A body that arrives in one part (the usual case) is kept as it came, not copied.
            if body == nil { body = part } else { body!.writeImmutableBuffer(part) }
            guard ContinuousClock.now < deadline else {
                context.logger.notice("request body did not arrive in time; closing the connection",
                                      metadata: ["timeout": "\(timeout)"])
                throw refusing(context, Problem(.requestTimeout, slug: "request-timeout", title: "Request timeout",
                                                detail: "the body did not arrive within \(timeout)"))
            }
        }
        var request = request
        request.body = RequestBody(buffer: body ?? ByteBuffer())
        return try await next(request, context)
    }

    static let tooLarge = Problem(.contentTooLarge, slug: "body-too-large", title: "Body too large",
                                  detail: "the body must be at most \(Context.maxBodySize) bytes")

    /// Answers at once, and closes the connection `timeout` later at the latest: long enough
    /// for a client still sending a too-large body to finish and read the answer (a lingering
    /// close), never long enough to keep taking an endless or trickling one.
    private func refusing(_ context: Context, _ problem: Problem) -> Problem {
        let channel = context.channel
        channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { channel.close(promise: nil) }
        return problem
    }
}
