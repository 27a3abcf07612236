import ArgumentParser
import EchoRelayAPI
import EchoRelayCore
import EchoRelaySchema
import EchoRelayServer
import Foundation
import Logging

/// `echorelay tokens`: issues, lists and revokes the bearer tokens of the API. Like
/// `migrate`, it works on the database directly, so it needs no running server and no token
/// of its own: whoever can reach the database is already trusted. While a running `serve`
/// holds the embedded file, it goes through that server's `/v1/tokens` with an admin token.
struct TokensCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "Create, list and revoke API access tokens (works on the database directly).",
        discussion: """
            Requests carry a token as Authorization: Bearer <token>. Its role decides what it may do: \
            admin (everything), support (read events and users, replays, dead letters) or app (its own \
            subscriptions). Only a SHA-256 of each token is stored, so a token is shown once, when it is \
            created, and cannot be shown again: create a new one instead. ECHORELAY_ADMIN_TOKEN, when set on \
            the server, keeps working as an admin token beside these.

            On the embedded store while `echorelay serve` runs (it holds the file), these commands ask that \
            server instead, at ECHORELAY_URL (default http://127.0.0.1:8080) with ECHORELAY_TOKEN, an admin \
            token (the first run prints one): no downtime is needed.
            """,
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a token and print it once; the token is the last word of the output.",
            discussion: """
                Example:
                  echorelay tokens create --role support --name "support desk"
                  created support token "support desk" (tok_…); it is shown only now: er_…
                """
        )

        @Option(help: ArgumentHelp("The token's role: admin, support or app.", valueName: "role"))
        var role: String

        @Option(help: "What the token is for, shown in listings: 1–100 printable characters.")
        var name: String

        @OptionGroup var database: TokenDatabaseOptions

        func validate() throws {
            guard Role(rawValue: role) != nil else {
                throw ValidationError("--role must be admin, support or app, got \"\(role)\"")
            }
            do throws(AccessTokenNameError) {
                try AccessTokenName.validate(name)
            } catch {
                throw ValidationError("--name \(error.reason)")
            }
        }

        func run() async throws {
            let role = Role(rawValue: role)!  // checked in validate()
            let name = name
            let (record, token) = try await database.withStoreOrServer { store in
                let created = try await store.createAccessToken(name: name, role: role)
                try await store.recordAudit(actor: .commandLine, action: "token.create", target: created.record.id, filter: nil,
                                            matched: nil, reason: nil)
                return (API.AccessToken(created.record), created.token.revealed)
            } server: { api throws(ClientError) in
                let created = try await api.post(["v1", "tokens"], body: API.AccessTokenInput(role: role.rawValue, name: name))
                    .decode(API.CreatedAccessToken.self)
                return (API.AccessToken(id: created.id, name: created.name, role: created.role, created_at: created.created_at,
                                        revoked_at: created.revoked_at), created.token)
            }
            print("created \(record.role) token \"\(record.name)\" (\(record.id)); it is shown only now: \(token)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every token, revoked ones included, oldest first; never the tokens themselves."
        )

        @Flag(help: "Print a JSON array of {id, name, role, created_at, revoked_at}.")
        var json = false

        @OptionGroup var database: TokenDatabaseOptions

        func run() async throws {
            let records = try await database.withStoreOrServer { store in
                try await store.accessTokens().map(API.AccessToken.init)
            } server: { api throws(ClientError) in
                try await api.get(["v1", "tokens"]).decode(API.AccessTokenList.self).tokens
            }
            print(json ? try Self.json(records) : Self.table(records))
        }

        static func table(_ records: [API.AccessToken]) -> String {
            guard !records.isEmpty else { return "no access tokens (create one with: echorelay tokens create)" }
            // Names are printable (`AccessTokenName`), so the table shows them as they are.
            return TextOutput.table(["ID", "NAME", "ROLE", "CREATED", "REVOKED"], records.map { record in
                [record.id, record.name, record.role, TextOutput.time(record.created_at), TextOutput.time(record.revoked_at)]
            })
        }

        static func json(_ records: [API.AccessToken]) throws -> String {
            String(decoding: try canonicalJSON(records), as: UTF8.self)
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a token by its id (tok_…); requests carrying it get 401 from then on."
        )

        @Argument(help: ArgumentHelp("The token's id, as `echorelay tokens list` shows it.", valueName: "id"))
        var id: String

        @OptionGroup var database: TokenDatabaseOptions

        func run() async throws {
            let id = id
            let unknown = "no access token has the id \"\(id)\" (see: echorelay tokens list)"
            let (record, revoked) = try await database.withStoreOrServer { store in
                let revoked = try await store.revokeAccessToken(id: id)
                if revoked {
                    try await store.recordAudit(actor: .commandLine, action: "token.revoke", target: id, filter: nil,
                                                matched: nil, reason: nil)
                }
                // Read back for the confirmation, and to tell an unknown id from a revoked one.
                guard let record = try await store.accessTokens().first(where: { $0.id == id }) else {
                    throw TokensCommandError(unknown)
                }
                return (API.AccessToken(record), revoked)
            } server: { api throws(ClientError) in
                // Read first, to tell a token revoked now from one revoked before.
                let before = try await api.get(["v1", "tokens"]).decode(API.AccessTokenList.self).tokens.first { $0.id == id }
                guard let before else { throw ClientError(unknown) }
                if before.revoked_at != nil { return (before, false) }
                return (try await api.post(["v1", "tokens", id, "revoke"], body: EmptyBody()).decode(API.AccessToken.self), true)
            }
            if revoked {
                print("revoked \(record.role) token \"\(record.name)\" (\(record.id)); requests carrying it now get 401")
            } else {
                // The token is revoked either way, so this is not a failure: scripts may repeat a revoke.
                let when = record.revoked_at ?? "an earlier time"
                print("\(record.role) token \"\(record.name)\" (\(record.id)) was already revoked at \(when); nothing changed")
            }
        }
    }
}

extension API.AccessToken {
    /// As `GET /v1/tokens` lists it, so that both ways of reaching the tokens print the same.
    init(_ record: AccessTokenRecord) {
        self.init(id: record.id, name: record.name, role: record.role.rawValue, created_at: RFC3339.format(record.createdAt),
                  revoked_at: record.revokedAt.map(RFC3339.format))
    }
}

/// The database and logging options every `tokens` subcommand shares.
struct TokenDatabaseOptions: ParsableArguments {
    /// The embedded file must not be in use by a running `serve`: its lock says so if it is.
    @OptionGroup var database: DatabaseOption

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. (env: ECHORELAY_LOG_LEVEL, default: warning)")
    var logLevel: String?

    @Option(help: "While a running serve holds the embedded store: the server to ask instead. (env: ECHORELAY_URL, default: http://127.0.0.1:8080)")
    var url: String?

    @Option(help: "While a running serve holds the embedded store: an admin token of that server (its first run prints one). Prefer the environment. (env: ECHORELAY_TOKEN)")
    var token: String?

    /// Runs `store` on the database; while a running `serve` holds the embedded file, runs
    /// `server` through that server's API instead, so a token needs no downtime.
    func withStoreOrServer<Result: Sendable>(
        _ store: @Sendable (any EchoRelayStore) async throws -> Result,
        server: (APIClient) async throws(ClientError) -> Result
    ) async throws -> Result {
        do {
            return try await withStore(store)
        } catch where DatabaseLocation.isHeldByAnotherProcess(error) {
            do {
                let token = try ClientOptions.token(token, missing: ClientError(
                    "the embedded store is in use by a running echorelay serve, and ECHORELAY_TOKEN is not set to ask it instead",
                    hint: "set ECHORELAY_TOKEN (or --token) to an admin token of that server (its first run printed one), and ECHORELAY_URL (or --url) if it does not listen on http://127.0.0.1:8080; or stop serve"
                ))
                let baseURL = try ClientOptions.baseURL(url)
                writeToStandardError("note: the embedded store is in use by a running serve; asking it at \(baseURL) instead")
                return try await APIClient.withHTTPClient { http in
                    try await server(APIClient(baseURL: baseURL, token: token, http: http))
                }
            } catch let error as ClientError {
                writeToStandardError(error.description)
                throw ExitCode.failure
            }
        }
    }

    /// Runs `body` with a store on the database, after applying any pending migrations so
    /// that a token can be created before the first `serve`. `sealer` seals and opens
    /// subscription secrets (for `reseal`).
    func withStore<Result: Sendable>(
        sealer: SecretSealer? = nil, _ body: @Sendable (any EchoRelayStore) async throws -> Result
    ) async throws -> Result {
        // Warnings only by default: the output is for the operator, and may be parsed.
        let chosenLevel = Setting.value(logLevel, "ECHORELAY_LOG_LEVEL")
        let logger = try LoggingOptions.parse(["--log-level", chosenLevel ?? "warning"]).bootstrap(label: "echorelay.tokens")
        // The pool's own logger. `withRunning` starts `run()` and the first query together, so
        // the pool may warn that a connection was asked for before `run()` began, which is
        // harmless. Unless a level was chosen, only its errors are shown; a connection that
        // fails is reported anyway, as the command's error.
        var poolLogger = logger
        if chosenLevel == nil { poolLogger.logLevel = .error }
        return try await database.location().withStore(sealer: sealer, logger: logger, poolLogger: poolLogger) { opened in
            do {
                _ = try await opened.migrate()
            } catch let error as MigrationError {
                throw TokensCommandError(error.description)
            }
            return try await body(opened.store)
        }
    }
}

/// A failure of a `tokens` command, printed as `Error: <description>` with a non-zero exit.
struct TokensCommandError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension Principal {
    /// The operator at the command line, as the audit log names them: tokens commands work
    /// on the database directly, with no token of their own.
    static var commandLine: Principal {
        let user = ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "unknown user"
        return Principal(tokenID: nil, name: "command line (\(user))", role: .admin)
    }
}
