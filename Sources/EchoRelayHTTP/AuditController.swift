import EchoRelayAPI
import EchoRelayCore
import Foundation
import Hummingbird

/// `GET /v1/audit`: who did what, newest first. Administrators only.
struct AuditController<Context: RequestContext>: Sendable {
    let store: any AuditStore
    let authorizer: BearerAuthorizer

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/audit", use: list)
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        try await authorizer.require(request, roles: [.admin])
        var reader = QueryReader(request)
        var query = AuditQuery(action: reader.string("action"), actorName: reader.string("actor"), target: reader.string("target"),
                               since: reader.time("since"), until: reader.time("until"))
        reader.checkRange(since: query.since, until: query.until)
        query.beforeID = reader.cursor()
        let page = try await reader.page { rows in
            query.limit = rows
            return try await store.auditEntries(query)
        }
        return try JSONResponse.make(API.AuditList(page, item: API.AuditEntry.init) { String($0.id) })
    }
}
