import EchoRelayPostgres
import Foundation
import PostgresNIO
import Testing

/// `ECHORELAY_DATABASE_URL` read as libpq reads a connection URI, several hosts included.
@Suite struct DatabaseURLTests {
    static func endpoints(_ text: String, environment: [String: String] = [:]) throws -> DatabaseEndpoints {
        try DatabaseURL.endpoints(text, environment: environment)
    }

    static func problem(_ text: String) -> String? {
        do {
            _ = try DatabaseURL.endpoints(text, environment: [:])
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func oneHostIsUsedAsItIs() throws {
        let one = try Self.endpoints("postgres://echorelay:secret@db.internal:5433/relay?sslmode=disable&application_name=relay")
        #expect(one.names == ["db.internal:5433"])
        #expect(one.sessions == .any)
        let configuration = try #require(one.configurations.first)
        #expect(configuration.host == "db.internal" && configuration.port == 5433)
        #expect(configuration.username == "echorelay" && configuration.password == "secret" && configuration.database == "relay")
        #expect(configuration.options.additionalStartupParameters.contains { $0 == ("application_name", "relay") })
        #expect(try Self.endpoints("postgresql://u@h/d").names == ["h:5432"])
        let socket = try Self.endpoints("postgres://u@/d?host=/run/postgresql&port=5433")
        #expect(socket.configurations.first?.unixSocketPath == "/run/postgresql/.s.PGSQL.5433")
    }

    /// What `pg_autoctl show uri --formation default` prints, and libpq's other forms.
    @Test func severalHostsAreTriedInOrderForOneThatTakesWrites() throws {
        let failover = try Self.endpoints(
            "postgres://autoctl_node@127.0.0.1:5501,127.0.0.1:5502/appdb?target_session_attrs=read-write&sslmode=prefer"
        )
        #expect(failover.names == ["127.0.0.1:5501", "127.0.0.1:5502"])
        #expect(failover.sessions == .readWrite)
        #expect(failover.configurations.map(\.port) == [5501, 5502])
        #expect(failover.configurations.allSatisfy { $0.username == "autoctl_node" && $0.database == "appdb" })

        // Read-write is the default once there are several hosts; primary and any may be asked for.
        #expect(try Self.endpoints("postgres://u@a,b/d").sessions == .readWrite)
        #expect(try Self.endpoints("postgres://u@a,b/d?target_session_attrs=primary").sessions == .primary)
        #expect(try Self.endpoints("postgres://u@a,b/d?target_session_attrs=any").sessions == .any)
        #expect(try Self.endpoints("postgres://u@a:1,b/d").names == ["a:1", "b:5432"])
        #expect(try Self.endpoints("postgres://u@[::1]:5433,[fd00::2]/d").names == ["[::1]:5433", "[fd00::2]:5432"])
        #expect(try Self.endpoints("postgres://u@[::1]:5433/d").configurations.first?.host == "::1")

        // Hosts and ports in the query, as libpq allows: one port for all, or one each.
        #expect(try Self.endpoints("postgres://u@/d?host=a,b&port=5433").names == ["a:5433", "b:5433"])
        #expect(try Self.endpoints("postgres://u@/d?host=a,b&port=1,2").names == ["a:1", "b:2"])
        #expect(try Self.endpoints("postgres:///d?host=a&user=u&password=p").configurations.first?.password == "p")
    }

    /// As libpq, a URL without a user (the one `pg_autoctl show uri` prints) connects as
    /// PGUSER, or else as the operating system's user.
    @Test func withoutAUserPGUSEROrTheSystemUserIsTheUser() throws {
        let printed = "postgres://127.0.0.1:5501,127.0.0.1:5502/echorelay?target_session_attrs=read-write&sslmode=prefer"
        #expect(try Self.endpoints(printed, environment: ["PGUSER": "relay"]).configurations.allSatisfy { $0.username == "relay" })
        let system = try #require(try Self.endpoints(printed).configurations.first?.username)
        #expect(!system.isEmpty)
        #expect(system == (ProcessInfo.processInfo.environment["USER"] ?? system))
    }

    @Test func aURLThatCannotServeNamesWhatIsWrongAndNeverThePassword() {
        let cases: [(String, String)] = [
            ("mysql://u:hunter2@h/d", "must start with postgres:// (or postgresql://)"),
            ("postgres://u:hunter2@/d", "names no host (postgres://user@HOST:5432/database)"),
            ("postgres://u:hunter2@a,,b/d", "names no host (postgres://user@HOST:5432/database)"),
            ("postgres://u:hunter2@a:99999/d", "has a port that is not a number from 1 to 65535"),
            ("postgres://u:hunter2@a:x,b/d", "has a port that is not a number from 1 to 65535"),
            ("postgres://u:hunter2@[::1/d", "has an IPv6 address without its closing ]"),
            ("postgres://u:hunter2@/d?host=a,b,c&port=1,2", "gives 2 ports for 3 hosts (give one port, or one for each host)"),
            ("postgres://u:hunter2@a,b/d?target_session_attrs=read-only",
             "asks for target_session_attrs=read-only, but EchoRelay writes: use read-write (the default with several hosts), primary or any"),
            ("postgres://u:hunter2@a,b/d?target_session_attrs=sometimes", "has an unknown target_session_attrs (use read-write, primary or any)"),
            ("postgres://u:hunter2@a/d?sslmode=maybe", "has an unknown sslmode (use disable, prefer or require)"),
            ("postgres://u:hunter2@/d?host=/run/pg,b", "mixes a socket directory with other hosts (give one socket directory, or host names)"),
        ]
        for (url, reason) in cases {
            let problem = Self.problem(url)
            #expect(problem == reason, "\(url)")
            #expect(problem?.contains("hunter2") != true)
        }
    }
}
