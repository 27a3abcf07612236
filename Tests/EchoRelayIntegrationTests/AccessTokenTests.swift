import EchoRelayCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import PostgresNIO
import Synchronization
import Testing
import TestSupport

@testable import EchoRelayHTTP

/// Access tokens end to end: issued, listed and revoked with the `echorelay tokens` binary on
/// the database directly, and honoured (or refused) by a live server.
@Suite struct AccessTokenTests {
    @Test func eachRoleReadsWhatItsRoleAllows() async throws {
        try await LiveServer.run { server in
            #expect(try await server.ingest(eventBody(id: "evt_roles", userID: "u-roles")).status == 202)
            let admin = try await Self.create(role: "admin", name: "ops", in: server.database)
            let support = try await Self.create(role: "support", name: "support desk", in: server.database)
            let app = try await Self.create(role: "app", name: "app backend", in: server.database)

            for token in [admin.token, support.token, LiveServer.adminToken] {
                let event = try await server.http.get("/v1/events/evt_roles", bearer: token)
                #expect(event.status == 200)
                #expect(event.json?["id"] as? String == "evt_roles")
                // Allowed in, and told that no event of this user has been verified yet.
                #expect(try await server.http.get("/v1/users/u-roles", bearer: token).status == 404)
            }
            for path in ["/v1/events/evt_roles", "/v1/users/u-roles"] {
                let response = try await server.http.get(path, bearer: app.token)
                #expect(response.status == 403)
                #expect(response.headers["Content-Type"].first == "application/problem+json")
                #expect(response.json?["type"] as? String == "urn:echorelay:problem:forbidden")
                let detail = try #require(response.json?["detail"] as? String)
                #expect(detail.contains("admin or support"))
                #expect(response.json?["sequence"] == nil, "a forbidden answer must not carry the event")
            }
        }
    }

    @Test func refusesRequestsWithoutAValidToken() async throws {
        try await LiveServer.run { server in
            #expect(try await server.ingest(eventBody(id: "evt_401")).status == 202)
            let issued = try await Self.create(role: "admin", name: "real", in: server.database)
            let altered = String(issued.token.dropLast()) + (issued.token.hasSuffix("A") ? "B" : "A")
            for token in [nil, AccessTokenText.generate(), altered, "er_short", issued.id, "Bearer"] as [String?] {
                let response = try await server.http.get("/v1/events/evt_401", bearer: token)
                #expect(response.status == 401, "token \(token ?? "none")")
                #expect(response.headers["WWW-Authenticate"].first == "Bearer")
                #expect(response.headers["Content-Type"].first == "application/problem+json")
            }
            #expect(try await server.http.get("/v1/events/evt_401", bearer: issued.token).status == 200)
        }
    }

    @Test func aRevokedTokenIsRefusedAtOnce() async throws {
        try await LiveServer.run { server in
            #expect(try await server.ingest(eventBody(id: "evt_revoke")).status == 202)
            let support = try await Self.create(role: "support", name: "leaver", in: server.database)
            #expect(try await server.http.get("/v1/events/evt_revoke", bearer: support.token).status == 200)

            let revoke = try await Self.tokens(["revoke", support.id], in: server.database)
            #expect(revoke.status == 0, "\(revoke.stderr)")
            #expect(revoke.stdout.contains("revoked support token \"leaver\" (\(support.id))"))
            #expect(try await server.http.get("/v1/events/evt_revoke", bearer: support.token).status == 401)

            let again = try await Self.tokens(["revoke", support.id], in: server.database)
            #expect(again.status == 0, "revoking twice leaves the token revoked: not a failure")
            #expect(again.stdout.contains("already revoked"))
            // ECHORELAY_ADMIN_TOKEN is not a stored token and keeps working.
            #expect(try await server.http.get("/v1/events/evt_revoke", bearer: LiveServer.adminToken).status == 200)
        }
    }

    /// Runs on a database nothing has migrated: the command applies the migrations itself.
    @Test func listShowsEveryTokenButNeverItsValue() async throws {
        try await TestDatabase.withFresh { database in
            let empty = try await Self.tokens(["list"], in: database)
            #expect(empty.status == 0, "\(empty.stderr)")
            #expect(empty.stdout.contains("no access tokens"))

            let kept = try await Self.create(role: "app", name: "Zoë's backend", in: database)
            let gone = try await Self.create(role: "support", name: "old desk", in: database)
            #expect(try await Self.tokens(["revoke", gone.id], in: database).status == 0)

            let table = try await Self.tokens(["list"], in: database)
            #expect(table.status == 0, "\(table.stderr)")
            let lines = table.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 3)
            #expect(lines.first?.split(separator: " ", omittingEmptySubsequences: true) == ["ID", "NAME", "ROLE", "CREATED", "REVOKED"])
            let keptLine = try #require(lines.first { $0.hasPrefix(kept.id) })
            let goneLine = try #require(lines.first { $0.hasPrefix(gone.id) })
            #expect(keptLine.contains("Zoë's backend") && keptLine.contains(" app ") && keptLine.hasSuffix(" -"))
            #expect(goneLine.contains("old desk") && goneLine.contains(" support ") && !goneLine.hasSuffix(" -"))

            let json = try await Self.tokens(["list", "--json"], in: database)
            #expect(json.status == 0, "\(json.stderr)")
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            #expect(rows.map { $0["id"] as? String } == [kept.id, gone.id])
            #expect(rows.map { $0["name"] as? String } == ["Zoë's backend", "old desk"])
            #expect(rows.map { $0["role"] as? String } == ["app", "support"])
            #expect(rows[0]["revoked_at"] is NSNull)
            #expect((rows[1]["revoked_at"] as? String).flatMap(RFC3339.parse) != nil)
            #expect((rows[0]["created_at"] as? String).flatMap(RFC3339.parse) != nil)

            for output in [table.stdout, table.stderr, json.stdout, json.stderr] {
                for token in [kept.token, gone.token] {
                    #expect(!output.contains(token) && !output.contains(token.dropFirst(3)), "a listing showed a token")
                }
                #expect(!output.contains("er_"))
            }
        }
    }

    @Test func theDatabaseHoldsOnlyHashesOfTokens() async throws {
        try await TestDatabase.withFresh { database in
            let created = try await Self.create(role: "admin", name: "hash check", in: database)
            #expect(AccessTokenText.isWellFormed(created.token))
            let rows = try await database.withClient { client in
                let rows = try await client.query("SELECT id, token_sha256, row_to_json(t)::text FROM access_tokens AS t")
                var result: [RowText] = []
                for try await (id, hash, text) in rows.decode((String, Data, String).self) {
                    result.append(RowText(id: id, hash: Array(hash), text: text))
                }
                return result
            }
            let row = try #require(rows.first)
            #expect(rows.count == 1)
            #expect(row.id == created.id)
            #expect(row.hash == AccessTokenText.hash(created.token))
            #expect(!row.text.contains(created.token) && !row.text.contains(created.token.dropFirst(3)))
        }
    }

    @Test func revokingAnUnknownIDFails() async throws {
        try await TestDatabase.withFresh { database in
            let result = try await Self.tokens(["revoke", "tok_doesnotexist"], in: database)
            #expect(result.status != 0)
            #expect(result.stderr.contains("no access token has the id \"tok_doesnotexist\""))
            #expect(result.stdout.isEmpty)
        }
    }

    /// Arguments are checked before any connection: the database here does not exist.
    @Test(arguments: [
        (["--role", "root", "--name", "x"], "--role must be admin, support or app"),
        (["--role", "app", "--name", ""], "--name must not be empty"),
        (["--role", "app", "--name", "two\nlines"], "--name must be printable"),
        (["--role", "app", "--name", "tab\there"], "--name must be printable"),
        (["--role", "app", "--name", String(repeating: "n", count: 101)], "--name must be at most 100 characters"),
        (["--role", "app", "--name", " padded"], "--name must not start or end with a space"),
    ])
    func createRefusesABadRoleOrName(arguments: [String], message: String) async throws {
        let result = try await ChildProcess.run(["tokens", "create"] + arguments, environment: [
            "ECHORELAY_DATABASE_URL": "postgres://echorelay@127.0.0.1:1/none?sslmode=disable",
        ])
        #expect(result.status != 0)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func createPrintsTheTokenAsTheLastWordOnce() async throws {
        try await TestDatabase.withFresh { database in
            let result = try await Self.tokens(["create", "--role", "support", "--name", "desk"], in: database)
            #expect(result.status == 0, "\(result.stderr)")
            let token = try #require(result.stdout.split(whereSeparator: \.isWhitespace).last.map(String.init))
            #expect(AccessTokenText.isWellFormed(token))
            #expect(result.stdout.components(separatedBy: token).count == 2, "the token is printed exactly once")
            #expect(result.stdout.hasPrefix("created support token \"desk\" (tok_"))
            #expect(result.stderr.isEmpty, "logs stay quiet by default: \(result.stderr)")
        }
    }

    // MARK: The authorizer alone

    @Test func theEnvironmentAdminTokenNeedsNoLookup() async throws {
        let store = StubTokenStore { _ in throw StoreError.unavailable("must not be asked") }
        let authorizer = BearerAuthorizer(adminToken: Secret("env-admin"), tokens: store, logger: TestLogger.quiet)
        #expect(try await authorizer.authenticate(Self.request(bearer: "env-admin")) == .environmentAdmin)
        #expect(try await authorizer.require(Self.request(bearer: "env-admin"), roles: [.admin]).tokenID == nil)
        #expect(store.lookups == 0)
    }

    @Test func onlyTokenShapedTextIsLookedUp() async throws {
        let store = StubTokenStore { _ in nil }
        let authorizer = BearerAuthorizer(adminToken: nil, tokens: store, logger: TestLogger.quiet)
        for header in ["Bearer not-a-token", "Bearer ", "Basic abc", "Bearer env-admin"] {
            let problem = await #expect(throws: Problem.self) { try await authorizer.authenticate(Self.request(authorization: header)) }
            #expect(problem?.status == .unauthorized)
        }
        #expect(store.lookups == 0)
        let problem = await #expect(throws: Problem.self) {
            try await authorizer.authenticate(Self.request(bearer: AccessTokenText.generate()))
        }
        #expect(problem?.status == .unauthorized)
        #expect(store.lookups == 1)
    }

    @Test func aStoreOutageIsAnswered503AndAFaultIs500() async throws {
        for (failure, status) in [(StoreError.unavailable("down"), HTTPResponse.Status.serviceUnavailable),
                                  (StoreError.unexpected("bad row"), .internalServerError)] {
            let authorizer = BearerAuthorizer(adminToken: nil, tokens: StubTokenStore { _ in throw failure }, logger: TestLogger.quiet)
            let problem = await #expect(throws: Problem.self) {
                try await authorizer.authenticate(Self.request(bearer: AccessTokenText.generate()))
            }
            #expect(problem?.status == status)
        }
    }

    @Test func theWrongRoleIs403NamingTheRolesAllowed() async throws {
        let token = AccessTokenText.generate()
        let app = Principal(tokenID: "tok_1", name: "backend", role: .app)
        let store = StubTokenStore { hash in hash == AccessTokenText.hash(token) ? app : nil }
        let authorizer = BearerAuthorizer(adminToken: nil, tokens: store, logger: TestLogger.quiet)
        #expect(try await authorizer.require(Self.request(bearer: token), roles: [.app, .admin]) == app)
        let problem = await #expect(throws: Problem.self) {
            try await authorizer.require(Self.request(bearer: token), roles: [.support, .admin])
        }
        #expect(problem?.status == .forbidden)
        #expect(problem?.slug == "forbidden")
        #expect(problem?.detail == "this needs the admin or support role; the token has the app role")
    }

    // MARK: Helpers

    struct RowText: Sendable {
        let id: String
        let hash: [UInt8]
        let text: String
    }

    /// Runs `echorelay tokens ARGUMENTS` on the database.
    static func tokens(_ arguments: [String], in database: TestDatabase) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run(["tokens"] + arguments, environment: ["ECHORELAY_DATABASE_URL": database.url])
    }

    /// Creates a token with the CLI: its id and the token, the last word of the output.
    static func create(role: String, name: String, in database: TestDatabase) async throws -> (id: String, token: String) {
        let result = try await tokens(["create", "--role", role, "--name", name], in: database)
        guard result.status == 0 else { throw TestSetupError("tokens create failed: \(result.stderr)") }
        let words = result.stdout.split(whereSeparator: \.isWhitespace).map(String.init)
        let id = try #require(words.first { $0.hasPrefix("(tok_") }).trimmingCharacters(in: CharacterSet(charactersIn: "();"))
        return (id, try #require(words.last))
    }

    static func request(bearer token: String) -> Request {
        request(authorization: "Bearer \(token)")
    }

    static func request(authorization: String) -> Request {
        Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/v1/events/x",
                              headerFields: [.authorization: authorization]),
            body: RequestBody(buffer: ByteBuffer())
        )
    }
}

/// An access token store that only answers lookups, with `lookup`, and counts them.
final class StubTokenStore: AccessTokenStore {
    private let lookup: @Sendable ([UInt8]) throws -> Principal?
    private let count = Mutex(0)

    init(_ lookup: @escaping @Sendable ([UInt8]) throws -> Principal?) {
        self.lookup = lookup
    }

    var lookups: Int { count.withLock { $0 } }

    func principal(forTokenHash hash: [UInt8]) async throws -> Principal? {
        count.withLock { $0 += 1 }
        return try lookup(hash)
    }

    func createAccessToken(name: String, role: Role) async throws -> (record: AccessTokenRecord, token: Secret) {
        throw StoreError.unexpected("not used")
    }

    func accessTokens() async throws -> [AccessTokenRecord] { [] }

    func revokeAccessToken(id: String) async throws -> Bool { false }
}
