import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

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
        let limit = reader.limit()
        try reader.finish()
        let page = try await PageCut.fetch(limit: limit) { rows in
            query.limit = rows
            return try await store.auditEntries(query)
        }
        return try JSONResponse.make(PageView("entries", page, cursor: { String($0.id) }, view: AuditEntryView.init))
    }
}

struct AuditEntryView: Encodable {
    let entry: AuditEntry

    init(_ entry: AuditEntry) {
        self.entry = entry
    }

    struct Actor: Encodable {
        let name: String
        let role: String
        let tokenID: String?

        enum CodingKeys: String, CodingKey {
            case name, role
            case tokenID = "token_id"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(role, forKey: .role)
            try container.encode(tokenID, forKey: .tokenID)
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, at, actor, action, target, filter, matched, reason
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entry.id, forKey: .id)
        try container.encode(RFC3339.format(entry.at), forKey: .at)
        try container.encode(Actor(name: entry.actorName, role: entry.actorRole, tokenID: entry.actorTokenID), forKey: .actor)
        try container.encode(entry.action, forKey: .action)
        try container.encode(entry.target, forKey: .target)
        try container.encode(entry.filter, forKey: .filter)
        try container.encode(entry.matched, forKey: .matched)
        try container.encode(entry.reason, forKey: .reason)
    }
}
