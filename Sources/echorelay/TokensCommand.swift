import ArgumentParser
import EchoRelayAPI
import EchoRelayCore
import EchoRelaySchema
import EchoRelayServer
import Foundation
import Logging

/// `echorelay tokens`: issues, lists and revokes the bearer tokens of the API. Like
/// `migrate`, it works on the database directly, so it needs no running server and no token
/// of its own: whoever can reach the database is already trusted.
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
            let (record, token) = try await database.withStore { store in
                let created = try await store.createAccessToken(name: name, role: role)
                try await store.recordAudit(actor: .commandLine, action: "token.create", target: created.record.id, filter: nil,
                                            matched: nil, reason: nil)
                return created
            }
            print("created \(record.role.rawValue) token \"\(record.name)\" (\(record.id)); it is shown only now: \(token.revealed)")
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
            let records = try await database.withStore { store in try await store.accessTokens() }
            print(json ? try Self.json(records) : Self.table(records))
        }

        static func table(_ records: [AccessTokenRecord]) -> String {
            guard !records.isEmpty else { return "no access tokens (create one with: echorelay tokens create)" }
            // Names are printable (`AccessTokenName`), so the table shows them as they are.
            return TextOutput.table(["ID", "NAME", "ROLE", "CREATED", "REVOKED"], records.map { record in
                [record.id, record.name, record.role.rawValue, RFC3339.format(record.createdAt),
                 record.revokedAt.map(RFC3339.format) ?? "-"]
            })
        }

        static func json(_ records: [AccessTokenRecord]) throws -> String {
            let rows = records.map {
                TokenListRow(id: $0.id, name: $0.name, role: $0.role.rawValue, created_at: RFC3339.format($0.createdAt),
                             revoked_at: $0.revokedAt.map(RFC3339.format))
            }
            return String(decoding: try canonicalJSON(rows), as: UTF8.self)
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
            let (record, revoked) = try await database.withStore { store in
                let revoked = try await store.revokeAccessToken(id: id)
                if revoked {
                    try await store.recordAudit(actor: .commandLine, action: "token.revoke", target: id, filter: nil,
                                                matched: nil, reason: nil)
                }
                // Read back for the confirmation, and to tell an unknown id from a revoked one.
                guard let record = try await store.accessTokens().first(where: { $0.id == id }) else {
                    throw TokensCommandError("no access token has the id \"\(id)\" (see: echorelay tokens list)")
                }
                return (record, revoked)
            }
            if revoked {
                print("revoked \(record.role.rawValue) token \"\(record.name)\" (\(record.id)); requests carrying it now get 401")
            } else {
                // The token is revoked either way, so this is not a failure: scripts may repeat a revoke.
                let when = record.revokedAt.map(RFC3339.format) ?? "an earlier time"
                print("\(record.role.rawValue) token \"\(record.name)\" (\(record.id)) was already revoked at \(when); nothing changed")
            }
        }
    }
}

/// One token in `tokens list --json`.
struct TokenListRow: Encodable {
    let id: String
    let name: String
    let role: String
    let created_at: String
    /// Null while valid, not absent.
    @Nullable var revoked_at: String?
}

/// The database and logging options every `tokens` subcommand shares.
struct TokenDatabaseOptions: ParsableArguments {
    /// The embedded file must not be in use by a running `serve`: its lock says so if it is.
    @OptionGroup var database: DatabaseOption

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. (env: ECHORELAY_LOG_LEVEL, default: warning)")
    var logLevel: String?

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
