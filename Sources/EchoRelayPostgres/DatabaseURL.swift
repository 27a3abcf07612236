import Foundation
import PostgresNIO

/// Turns `postgres://user:password@host:port/database?sslmode=…` into a client
/// configuration. Errors name the part that is wrong and never repeat the password.
public enum DatabaseURL {
    public static func postgresConfiguration(_ text: String) throws(DatabaseURLError) -> PostgresClient.Configuration {
        guard let components = URLComponents(string: text),
              let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql"
        else { throw DatabaseURLError("must start with postgres:// (or postgresql://)") }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last }
        )
        guard let user = components.user.map({ $0.removingPercentEncoding ?? $0 }) ?? query["user"], !user.isEmpty else {
            throw DatabaseURLError("names no user (postgres://USER@host/database)")
        }
        let password = components.password.map { $0.removingPercentEncoding ?? $0 } ?? query["password"]
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let database = path.isEmpty ? nil : (path.removingPercentEncoding ?? path)

        var configuration: PostgresClient.Configuration
        if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
            // libpq's convention: ?host=/run/postgresql names the socket directory.
            let port = components.port ?? Int(query["port"] ?? "") ?? 5432
            configuration = .init(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password,
                database: database
            )
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw DatabaseURLError("names no host (postgres://user@HOST:5432/database)")
            }
            let tls: PostgresClient.Configuration.TLS
            switch query["sslmode"] ?? "prefer" {
            case "disable": tls = .disable
            case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
            case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
            default: throw DatabaseURLError("has an unknown sslmode (use disable, prefer or require)")
            }
            configuration = .init(
                host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")),
                port: components.port ?? 5432, username: user, password: password, database: database, tls: tls
            )
        }
        if let name = query["application_name"] {
            configuration.options.additionalStartupParameters.append(("application_name", name))
        }
        return configuration
    }
}

public struct DatabaseURLError: Error, CustomStringConvertible {
    public let reason: String
    init(_ reason: String) { self.reason = reason }
    public var description: String { "ECHORELAY_DATABASE_URL \(reason)" }
}
