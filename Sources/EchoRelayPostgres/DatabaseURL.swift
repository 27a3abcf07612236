import Foundation
import PostgresNIO
#if canImport(Glibc)
import Glibc
#endif

/// Reads `ECHORELAY_DATABASE_URL` as libpq reads a connection URI:
/// `postgres://user:password@host1:5432,host2:5433/database?target_session_attrs=read-write&sslmode=…`,
/// the hosts also as `?host=h1,h2&port=p1,p2`, or a socket directory as `?host=/run/postgresql`.
/// Errors name the part that is wrong and never repeat the password.
public enum DatabaseURL {
    /// Every host of the URL, in order, with what a session there must allow.
    public static func endpoints(
        _ text: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(DatabaseURLError) -> DatabaseEndpoints {
        let url = try ParsedURL(text)
        let query = url.query
        // As libpq: without a user in the URL, PGUSER, else the operating system's user
        // (the URL `pg_autoctl show uri` prints names none).
        guard let user = url.user ?? query["user"] ?? environment["PGUSER"] ?? Self.systemUser, !user.isEmpty else {
            throw DatabaseURLError("names no user (postgres://USER@host/database)")
        }
        let password = url.password ?? query["password"]
        let database = url.database ?? query["dbname"]

        let tls: PostgresClient.Configuration.TLS
        switch query["sslmode"] ?? "prefer" {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        default: throw DatabaseURLError("has an unknown sslmode (use disable, prefer or require)")
        }

        var configurations: [PostgresClient.Configuration] = []
        var names: [String] = []
        let hostList = query["host"].map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let portList = try query["port"].map { text throws(DatabaseURLError) in
            try text.split(separator: ",", omittingEmptySubsequences: false).map { part throws(DatabaseURLError) in
                guard let port = Int(part), (1...65_535).contains(port) else {
                    throw DatabaseURLError("has a port that is not a number from 1 to 65535")
                }
                return port
            }
        }
        if let socketDirectory = hostList?.first, hostList?.count == 1, socketDirectory.hasPrefix("/") {
            // libpq's convention: ?host=/run/postgresql names the socket directory.
            let port = url.hosts.first?.port ?? portList?.first ?? 5432
            configurations.append(.init(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user,
                                        password: password, database: database))
            names.append("\(socketDirectory)/.s.PGSQL.\(port)")
        } else {
            // Hosts from the query replace those of the authority, as in libpq.
            let hosts: [(name: String, port: Int?)] = hostList.map { $0.map { ($0, nil) } } ?? url.hosts
            guard !hosts.isEmpty, hosts.allSatisfy({ !$0.name.isEmpty }) else {
                throw DatabaseURLError("names no host (postgres://user@HOST:5432/database)")
            }
            if let portList, portList.count != 1, portList.count != hosts.count {
                throw DatabaseURLError("gives \(portList.count) ports for \(hosts.count) hosts (give one port, or one for each host)")
            }
            for (index, host) in hosts.enumerated() {
                guard !host.name.hasPrefix("/") else {
                    throw DatabaseURLError("mixes a socket directory with other hosts (give one socket directory, or host names)")
                }
                let port = host.port ?? portList.map { $0.count == 1 ? $0[0] : $0[index] } ?? 5432
                configurations.append(.init(host: host.name, port: port, username: user, password: password, database: database, tls: tls))
                names.append(host.name.contains(":") ? "[\(host.name)]:\(port)" : "\(host.name):\(port)")
            }
        }
        if let name = query["application_name"] {
            for index in configurations.indices {
                configurations[index].options.additionalStartupParameters.append(("application_name", name))
            }
        }

        let sessions: DatabaseEndpoints.SessionAttributes
        switch query["target_session_attrs"] {
        case nil: sessions = configurations.count > 1 ? .readWrite : .any
        case "any": sessions = .any
        case "read-write": sessions = .readWrite
        case "primary": sessions = .primary
        case "read-only", "standby", "prefer-standby":
            throw DatabaseURLError("asks for target_session_attrs=\(query["target_session_attrs"]!), but EchoRelay writes: use read-write (the default with several hosts), primary or any")
        default:
            throw DatabaseURLError("has an unknown target_session_attrs (use read-write, primary or any)")
        }
        return DatabaseEndpoints(configurations: configurations, names: names, sessions: sessions)
    }

    /// The name of the user this process runs as.
    static var systemUser: String? {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    /// The configuration of a URL with one host (or socket).
    public static func postgresConfiguration(_ text: String) throws(DatabaseURLError) -> PostgresClient.Configuration {
        let endpoints = try endpoints(text)
        guard endpoints.configurations.count == 1 else {
            throw DatabaseURLError("names \(endpoints.configurations.count) hosts where one is expected")
        }
        return endpoints.configurations[0]
    }
}

/// The hosts of a database URL, in the order they are tried, and which of them will do.
public struct DatabaseEndpoints: Sendable {
    /// `target_session_attrs`: what a host must be for EchoRelay to use it.
    public enum SessionAttributes: String, Sendable {
        /// The first host that answers (one host: no check).
        case any
        /// A host whose sessions accept writes (`transaction_read_only` off).
        case readWrite = "read-write"
        /// A host that is not in recovery (`pg_is_in_recovery()` false).
        case primary
    }

    public let configurations: [PostgresClient.Configuration]
    /// Each host as `host:port` (or the socket's path), for logs and errors: no credentials.
    public let names: [String]
    public let sessions: SessionAttributes
}

/// A connection URI cut into its parts, percent-decoded: the authority's user, password and
/// hosts (each with its port, if given), the database, and the query.
private struct ParsedURL {
    var user: String?
    var password: String?
    var hosts: [(name: String, port: Int?)] = []
    var database: String?
    var query: [String: String] = [:]

    init(_ text: String) throws(DatabaseURLError) {
        let lowered = text.lowercased()
        guard let prefix = ["postgres://", "postgresql://"].first(where: { lowered.hasPrefix($0) }) else {
            throw DatabaseURLError("must start with postgres:// (or postgresql://)")
        }
        var rest = Substring(text.dropFirst(prefix.count))
        if let mark = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: mark)...].split(separator: "&") where !pair.isEmpty {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = Self.decoded(parts[0]) else { throw DatabaseURLError("has a malformed query") }
                query[name] = parts.count > 1 ? Self.decoded(parts[1]) ?? "" : ""
            }
            rest = rest[..<mark]
        }
        var authority = rest
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            let path = rest[rest.index(after: slash)...]
            if !path.isEmpty {
                guard let name = Self.decoded(path) else { throw DatabaseURLError("has a malformed database name") }
                database = name
            }
        }
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            // Never quoted: the password is a secret.
            guard let name = Self.decoded(parts[0]) else { throw DatabaseURLError("has a malformed user name") }
            user = name.isEmpty ? nil : name
            if parts.count > 1 {
                guard let secret = Self.decoded(parts[1]) else { throw DatabaseURLError("has a malformed password") }
                password = secret
            }
        }
        guard !authority.isEmpty else { return }
        for spec in authority.split(separator: ",", omittingEmptySubsequences: false) {
            hosts.append(try Self.host(spec))
        }
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`.
    private static func host(_ spec: Substring) throws(DatabaseURLError) -> (name: String, port: Int?) {
        var name = spec
        var port: Substring?
        if spec.hasPrefix("[") {
            guard let close = spec.firstIndex(of: "]") else { throw DatabaseURLError("has an IPv6 address without its closing ]") }
            name = spec[spec.index(after: spec.startIndex)..<close]
            let after = spec[spec.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw DatabaseURLError("has text after an IPv6 address that is not a port") }
                port = after.dropFirst()
            }
        } else if let colon = spec.lastIndex(of: ":") {
            name = spec[..<colon]
            port = spec[spec.index(after: colon)...]
        }
        guard let decodedName = decoded(name) else { throw DatabaseURLError("has a malformed host") }
        guard let port else { return (decodedName, nil) }
        guard let number = Int(port), (1...65_535).contains(number) else {
            throw DatabaseURLError("has a port that is not a number from 1 to 65535")
        }
        return (decodedName, number)
    }

    private static func decoded(_ text: Substring) -> String? {
        String(text).removingPercentEncoding
    }
}

public struct DatabaseURLError: Error, CustomStringConvertible {
    public let reason: String
    init(_ reason: String) { self.reason = reason }
    public var description: String { "ECHORELAY_DATABASE_URL \(reason)" }
}
