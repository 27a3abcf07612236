import EchoRelayCore
import EchoRelayQueue
import Hummingbird
import Logging

/// Renders every failure as problem+json: store outages as 503, unknown errors as 500 with
/// the cause logged (store errors carry texts that are safe to log), and Hummingbird's own
/// errors (404 for an unknown route, 413) in the same shape.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let problem as Problem {
            throw problem
        } catch let error as StoreError {
            context.logger.error("store failure", metadata: ["error": "\(error)"])
            if case .unavailable = error { throw Problem.serviceUnavailable }
            throw Problem.internalError
        } catch let error as StandbyUnconfirmed {
            context.logger.warning("answered 503: \(error)")
            throw Problem.standbyUnconfirmed(error)
        } catch is TimeoutError {
            context.logger.error("the database did not answer in time")
            throw Problem.serviceUnavailable
        } catch let error as any HTTPResponseError {
            throw Problem(error.status, slug: slug(for: error.status), title: error.status.reasonPhrase)
        } catch {
            context.logger.error("unhandled error", metadata: ["error.type": "\(type(of: error))"])
            throw Problem.internalError
        }
    }

    private func slug(for status: HTTPResponse.Status) -> String {
        status.reasonPhrase.lowercased().split(separator: " ").joined(separator: "-")
    }
}
