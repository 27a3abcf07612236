import EchoRelayAPI
import EchoRelayCore
import Hummingbird
import Logging

/// `GET /healthz` (the process answers) and `GET /readyz` (the database is reachable and
/// its migrations are current; `503` otherwise, so a load balancer stops sending traffic).
struct HealthController<Context: RequestContext>: Sendable {
    let store: any EventStore

    func addRoutes(to router: Router<Context>) {
        router.get("/healthz") { _, _ in
            try JSONResponse.make(API.Health(status: "ok"))
        }
        router.get("/readyz") { _, context in
            switch await store.readiness() {
            case .ready:
                return try JSONResponse.make(API.Health(status: "ready"))
            case .notReady(let reason):
                context.logger.warning("not ready", metadata: ["reason": "\(reason)"])
                return try JSONResponse.make(status: .serviceUnavailable, API.NotReady(reason: reason))
            }
        }
    }
}
