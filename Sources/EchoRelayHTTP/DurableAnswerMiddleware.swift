import EchoRelayCore
import HTTPTypes
import Hummingbird

/// `ECHORELAY_DURABILITY=standby` for everything acknowledged that is not ingest: a change
/// asked for through the API or the console (a subscription made or changed, a replay or a
/// re-verification started, a token issued or revoked, dead letters redriven) is answered
/// only once a standby holds it, or `503` if none does in time. The change is committed on the
/// primary by then, so the `503` says to check before repeating it. Ingest (`/v1/events`,
/// `/v1/sets`) confirms inside its own group commits, and a console session is only a sign-in
/// to repeat, so neither waits here.
struct DurableAnswerMiddleware<Context: RequestContext>: RouterMiddleware {
    let store: any EventStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response = try await next(request, context)
        guard Self.changes(request), response.status.code < 400 else { return response }
        try await store.confirmDurable()
        return response
    }

    static func changes(_ request: Request) -> Bool {
        switch request.method {
        case .get, .head, .options: false
        default: !["/v1/events", "/v1/sets", "/console/sign-in", "/console/sign-out"].contains(request.uri.path)
        }
    }
}
