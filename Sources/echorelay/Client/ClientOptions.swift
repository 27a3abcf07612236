import ArgumentParser
import EchoRelayCore
import Foundation

/// The options every client verb shares: where the server is, the token, and `--json`.
struct ClientOptions: ParsableArguments {
    @Option(help: "The EchoRelay server to ask. (env: ECHORELAY_URL, default: http://127.0.0.1:8080)")
    var url: String?

    @Option(help: "API token: support or admin for the support verbs, an app token (or admin) for `subscriptions`. Prefer the environment: flags are visible in the process list. (env: ECHORELAY_TOKEN, required)")
    var token: String?

    @Flag(help: "Print the server's JSON answer unchanged on standard output (and nothing else there), for scripts.")
    var json = false

    static let defaultURL = "http://127.0.0.1:8080"

    /// Runs `body` with a client, printing a failure as `error: …` / `hint: …` on standard
    /// error with exit status 1. Other exits (such as `ExitCode(3)`) pass through.
    func run(_ body: (APIClient) async throws -> Void) async throws {
        do {
            let (baseURL, token) = try settings()
            try await APIClient.withHTTPClient { http in
                try await body(APIClient(baseURL: baseURL, token: token, http: http))
            }
        } catch let error as ClientError {
            writeToStandardError(error.description)
            throw ExitCode.failure
        }
    }

    /// The base URL and the token, checked before any request.
    func settings() throws(ClientError) -> (baseURL: String, token: String) {
        let token = try Self.token(token, missing: ClientError(
            "no API token: set ECHORELAY_TOKEN (or pass --token)",
            hint: "an operator creates one with: echorelay tokens create --role support --name \"…\""
        ))
        return (try Self.baseURL(url), token)
    }

    /// The token from `flag` or ECHORELAY_TOKEN, trimmed (a token pasted from a file often
    /// ends with a newline); `missing` when there is none. Never quoted in an error.
    static func token(_ flag: String?, missing: ClientError) throws(ClientError) -> String {
        guard let token = Setting.value(flag, "ECHORELAY_TOKEN")?.trimmingCharacters(in: .whitespacesAndNewlines),
              !token.isEmpty else { throw missing }
        // Checked here, without quoting it: the HTTP client's own error would name the value.
        guard token.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) else {
            throw ClientError("ECHORELAY_TOKEN / --token holds characters no token has (spaces, control or non-ASCII characters)")
        }
        return token
    }

    /// The server's base URL from `flag` or ECHORELAY_URL, without a trailing slash.
    static func baseURL(_ flag: String?) throws(ClientError) -> String {
        let text = Setting.value(flag, "ECHORELAY_URL") ?? defaultURL
        guard let parsed = URLComponents(string: text), let scheme = parsed.scheme?.lowercased(),
              scheme == "http" || scheme == "https", parsed.host?.isEmpty == false,
              parsed.query == nil, parsed.fragment == nil, parsed.user == nil, parsed.password == nil else {
            // Quoted only without user:password@ or a query (say ?access_token=…), so that a
            // credential in the URL is never printed.
            let shown = text.contains("@") || text.contains("?") ? "" : ", got \"\(text)\""
            throw ClientError("ECHORELAY_URL / --url must be http://host[:port] or https://host[:port], with no user, query or fragment\(shown)")
        }
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }
}

/// Times given to `--since` and `--until`.
enum TimeArgument {
    static let help = "RFC 3339 (2026-11-23T10:00:00Z), a date (2026-11-23, midnight UTC) or a duration ago (30m, 2h, 7d)"

    /// The time as RFC 3339 in UTC, as the API takes it; nil when the text is none of the
    /// accepted forms. A duration counts back from `now`.
    static func resolve(_ text: String, now: Date = Date()) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = RFC3339.parse(trimmed) ?? RFC3339.parse(trimmed + "T00:00:00Z") {
            return RFC3339.format(date)
        }
        // A bare number is a duration to DurationText; here it is too ambiguous to guess.
        if let last = trimmed.last, last.isLetter, let duration = DurationText.parse(trimmed) {
            return RFC3339.format(now.addingTimeInterval(-duration.seconds))
        }
        return nil
    }

    /// Checks a flag's value in `validate()`, so a bad time is a usage error before any request.
    static func validate(_ text: String?, flag: String) throws {
        guard let text else { return }
        guard resolve(text) != nil else { throw ValidationError("\(flag) must be \(help); got \"\(text)\"") }
    }

    /// The value for the query or body; `validate` has already accepted it.
    static func value(_ text: String?) -> String? {
        text.flatMap { resolve($0) }
    }
}

/// `--reason`, which every change requires: it is kept in the audit log with the actor.
enum Reason {
    static func validate(_ reason: String?, doing action: String) throws {
        guard let reason, !reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ValidationError("--reason is required: say why you \(action); it is kept in the audit log")
        }
    }
}

/// Help text shared by the client verbs.
enum ClientHelp {
    static let exitStatus = """
        Exit status: 0 success; 1 the request failed or was refused (error: and hint: on standard error); \
        64 a usage error, found before any request is sent.
        """
}

func writeToStandardError(_ text: String) {
    FileHandle.standardError.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
}

/// JSON as EchoRelay writes it (as `JSONValue.canonicalEncoding()` does): keys sorted,
/// slashes not escaped.
func canonicalJSON(_ value: some Encodable) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return try encoder.encode(value)
}

/// Prints a JSON answer on standard output as it came (one trailing newline at most).
func printJSON(_ body: Data) {
    var text = String(decoding: body, as: UTF8.self)
    while text.hasSuffix("\n") { text.removeLast() }
    print(text)
}
