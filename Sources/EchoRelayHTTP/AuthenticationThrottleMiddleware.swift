import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Counts failed authentications (a `401` to a request with a bearer token, or a refused
/// console sign-in) per client address, and answers `429` with `Retry-After` to the next
/// attempts from an address past `ECHORELAY_AUTH_FAILURE_LIMIT` in a minute, before the
/// credential is looked at. Requests without a credential are not counted or stopped, nor
/// are those to operations that take no bearer token (the health checks, ingest, which is
/// signed): a stray `Authorization` header there is no attempt.
struct AuthenticationThrottleMiddleware: RouterMiddleware {
    typealias Context = EchoRelayRequestContext
    let throttle: AuthenticationThrottle
    let paths: DocumentedPaths
    let addresses: ClientAddressRule
    let metrics: RelayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let kind = attempt(request) else { return try await next(request, context) }
        let address = addresses.address(of: request, peer: context.channel.remoteAddress)
        if let wait = throttle.refusal(for: address) {
            metrics.authenticationThrottled(kind: kind)
            context.logger.notice("authentication refused: too many failures from this address", metadata: [
                "client": "\(address)", "kind": "\(kind)",
            ])
            throw Problem.tooManyAuthenticationFailures(limit: throttle.limit, retryAfter: wait)
        }
        do {
            let response = try await next(request, context)
            if response.status == .unauthorized { failed(kind, from: address) }
            return response
        } catch let problem as Problem where problem.status == .unauthorized {
            failed(kind, from: address)
            throw problem
        }
    }

    private func failed(_ kind: String, from address: String) {
        throttle.recordFailure(from: address)
        metrics.authenticationFailed(kind: kind)
    }

    /// `bearer` or `console` for a request that presents a credential; nil for any other.
    func attempt(_ request: Request) -> String? {
        if request.method == .post && request.uri.path == "/console/sign-in" { return "console" }
        // The header first: most requests (ingest among them) carry none, and need no look at the paths.
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer") else { return nil }
        return paths.takesNoBearerToken(request.method.rawValue, request.uri.path) ? nil : "bearer"
    }
}

extension Problem {
    /// 429: this address failed to authenticate too often in the last minute.
    static func tooManyAuthenticationFailures(limit: Int, retryAfter wait: Duration) -> Problem {
        let seconds = max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
        return Problem(
            .tooManyRequests, slug: "too-many-authentication-failures", title: "Too many failed authentications",
            detail: "more than \(limit) failed authentications from this address in a minute; try again in \(seconds) s",
            headers: [.retryAfter: String(seconds)]
        )
    }
}
