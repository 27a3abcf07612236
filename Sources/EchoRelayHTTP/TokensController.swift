import EchoRelayAPI
import EchoRelayCore
import Hummingbird
import Logging

/// `/v1/tokens` (admin): issue, list and revoke the API's bearer tokens while the server runs,
/// as `echorelay tokens` does on the database. Each change is audited; a token is shown once,
/// in the answer that made it, and only its SHA-256 is kept.
struct TokensController<Context: RequestContext>: Sendable {
    let store: any AccessTokenStore & AuditStore
    let authorizer: BearerAuthorizer

    func addRoutes(to router: Router<Context>) {
        router.get("/v1/tokens", use: list)
        router.post("/v1/tokens", use: create)
        router.post("/v1/tokens/{id}/revoke", use: revoke)
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        _ = try await authorizer.require(request, roles: [.admin])
        return try JSONResponse.make(API.AccessTokenList(tokens: try await store.accessTokens().map(API.AccessToken.init)))
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let principal = try await authorizer.require(request, roles: [.admin])
        let input = try await supportBody(request, TokenCreateRequest.parse)
        let (record, token) = try await store.createAccessToken(name: input.name, role: input.role)
        try await store.recordAudit(actor: principal, action: "token.create", target: record.id, filter: nil, matched: nil,
                                    reason: input.reason)
        context.logger.info("token.create", metadata: ["token.id": "\(record.id)", "role": "\(input.role.rawValue)", "actor": "\(principal.name)"])
        var response = try JSONResponse.make(status: .created, API.CreatedAccessToken(API.AccessToken(record), token: token.revealed))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    @Sendable func revoke(_ request: Request, context: Context) async throws -> Response {
        let principal = try await authorizer.require(request, roles: [.admin])
        let id = try context.parameters.decoded("id")
        let reason = try await supportBody(request, TokenRevokeRequest.parse).reason
        // Revoking twice changes nothing and is no error: the token is revoked either way.
        if try await store.revokeAccessToken(id: id) {
            try await store.recordAudit(actor: principal, action: "token.revoke", target: id, filter: nil, matched: nil, reason: reason)
            context.logger.info("token.revoke", metadata: ["token.id": "\(id)", "actor": "\(principal.name)"])
        }
        guard let record = try await store.accessTokens().first(where: { $0.id == id }) else {
            throw Problem.notFound("no access token with id \"\(id.prefix(60))\"")
        }
        return try JSONResponse.make(API.AccessToken(record))
    }
}

extension API.AccessToken {
    init(_ record: AccessTokenRecord) {
        self.init(id: record.id, name: record.name, role: record.role.rawValue, created_at: RFC3339.format(record.createdAt),
                  revoked_at: record.revokedAt.map(RFC3339.format))
    }
}
