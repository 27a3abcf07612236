import ArgumentParser
import EchoRelayAPI
import EchoRelayCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension EventsCommand {
    /// `echorelay events reverify`: asks the provider again about an event it could not
    /// answer for, with a fresh proof for the same user session: echo headers, or the user's
    /// current OAuth 2 access token.
    struct Reverify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify an unverifiable event again, with fresh OAuth Echo headers or the user's current OAuth 2 access token.",
            discussion: """
                An event is unverifiable when the provider could not be asked (it was down, it refused \
                EchoRelay's client credentials, or the headers' timestamp was outside its window). Its proof \
                was erased and may have expired anyway, so it needs a fresh one for the same user session.

                --echo names a file holding {"service_provider": …, "authorization": …} — what \
                `echorelay echo-sign --json` prints — or - for standard input:

                  echorelay echo-sign --url "$VERIFY_URL" --json \\
                    | echorelay events reverify evt_01HZX3 --reason "provider back" --echo -

                --oauth2 instead names a file holding {"access_token": …}, the user's current OAuth 2 \
                access token (the event is then verified by token introspection), or - for standard input:

                  printf '{"access_token": "%s"}' "$TOKEN" \\
                    | echorelay events reverify evt_01HZX4 --reason "idp back" --oauth2 -

                The header and the token are credentials: they are sent to the server and never printed. \
                Only an unverifiable event can be re-verified; follow it with `echorelay events show ID`.

                Needs a token with the support or admin role (ECHORELAY_TOKEN). \(ClientHelp.exitStatus)
                """
        )

        @Argument(help: ArgumentHelp("The unverifiable event's id (evt_…).", valueName: "id"))
        var id: String

        @Option(help: "Why: required, and kept in the audit log with who did it.")
        var reason: String?

        @Option(help: ArgumentHelp(
            "A file holding the echo object {\"service_provider\", \"authorization\"}, as `echorelay echo-sign --json` prints it; - reads standard input. (this or --oauth2 is required)",
            valueName: "file"
        ))
        var echo: String?

        @Option(help: ArgumentHelp(
            "A file holding the oauth2 object {\"access_token\"}, the user's current OAuth 2 access token; - reads standard input. (this or --echo is required)",
            valueName: "file"
        ))
        var oauth2: String?

        @OptionGroup var client: ClientOptions

        func validate() throws {
            try Reason.validate(reason, doing: "re-verify it")
            switch (echo.map { !$0.isEmpty } ?? false, oauth2.map { !$0.isEmpty } ?? false) {
            case (false, false):
                throw ValidationError("--echo is required (or --oauth2): a file with fresh echo headers (echorelay echo-sign --json prints them), or - for standard input")
            case (true, true):
                throw ValidationError("--echo and --oauth2 cannot both be given: an event is re-verified with one proof")
            default:
                break
            }
        }

        func run() async throws {
            try await client.run { api in
                // One of the two, as validate() made sure.
                let request: API.ReverifyRequest
                if let oauth2, !oauth2.isEmpty {
                    let token = try CredentialFile.oauth2.read(oauth2)
                    request = API.ReverifyRequest(reason: reason ?? "", oauth2: API.OAuth2Credentials(access_token: token["access_token", default: ""]))
                } else {
                    let headers = try CredentialFile.echo.read(echo ?? "-")
                    request = API.ReverifyRequest(reason: reason ?? "", echo: API.EchoCredentials(
                        service_provider: headers["service_provider", default: ""], authorization: headers["authorization", default: ""]))
                }
                let answer = try await api.post(["v1", "events", id, "reverify"], body: request)
                if client.json { return printJSON(answer.body) }
                let receipt = try answer.decode(API.ReverifyAccepted.self)
                let asked = request.oauth2 == nil ? "the fresh echo headers" : "the access token, by introspection"
                print("event \(receipt.id) is \(receipt.status) verification again: the provider will be asked with \(asked)")
                print("follow it with: echorelay events show \(receipt.id)")
            }
        }
    }
}

/// A proof of `events reverify` (`--echo`, `--oauth2`): a small JSON object read from a file or
/// standard input. Its values are credentials, so no message here quotes a value — only the
/// file and the name of the field that is missing or wrong.
struct CredentialFile: Sendable {
    /// The flag, which also names the object ("the echo object").
    let flag: String
    /// Each field, with the reason a value fails it (nil: it passes).
    let fields: [(name: String, problem: @Sendable (String) -> String?)]
    let hint: String

    static let echo = CredentialFile(flag: "echo", fields: [
        ("service_provider", EventFieldRules.serviceProviderProblem),
        ("authorization", { $0.hasPrefix("OAuth ") ? nil : "must be an OAuth 1.0a header starting with \"OAuth \"" }),
    ], hint: "--echo must hold one JSON object {\"service_provider\": …, \"authorization\": …}, as echorelay echo-sign --json prints it")

    static let oauth2 = CredentialFile(flag: "oauth2", fields: [("access_token", EventFieldRules.accessTokenProblem)],
                                       hint: "--oauth2 must hold one JSON object {\"access_token\": …}: the user's current OAuth 2 access token")

    /// A proof object is a few hundred bytes; anything this large is the wrong file.
    static let maximumBytes = 64 << 10

    /// Every field of the object in `path` (`-`: standard input), each one passing its rule.
    func read(_ path: String) throws(ClientError) -> [String: String] {
        let source = path == "-" ? "on standard input" : "in \"\(path)\""
        var handle = FileHandle.standardInput
        if path == "-" {
            if isatty(STDIN_FILENO) == 1 {
                writeToStandardError("reading the \(flag) object from standard input (end it with Ctrl-D)")
            }
        } else {
            guard let file = FileHandle(forReadingAtPath: path) else {
                throw ClientError("cannot read the --\(flag) file \"\(path)\": no such file, or not readable", hint: "give a file, or - to read standard input")
            }
            handle = file
        }
        defer { if path != "-" { try? handle.close() } }
        let bytes: Data
        do {
            bytes = try handle.read(upToCount: Self.maximumBytes + 1) ?? Data()
        } catch {
            throw ClientError("cannot read the \(flag) object \(source): \(error.localizedDescription)")
        }
        return try parse(bytes, source: source)
    }

    func parse(_ bytes: Data, source: String) throws(ClientError) -> [String: String] {
        guard bytes.count <= Self.maximumBytes else {
            throw ClientError("the \(flag) object \(source) is larger than \(Self.maximumBytes / 1024) KiB; an \(flag) object is a few hundred bytes", hint: hint)
        }
        guard !bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else {
            throw ClientError("there is no \(flag) object \(source): it is empty", hint: hint)
        }
        // Parsed here rather than by JSONDecoder, whose messages may quote the text.
        guard String(data: bytes, encoding: .utf8) != nil, let document = try? JSONValue.parse(bytes) else {
            throw ClientError("the \(flag) object \(source) is not valid JSON", hint: hint)
        }
        guard let object = document.objectValue else {
            throw ClientError("the \(flag) \(source) must be a JSON object, not \(document.typeName)", hint: hint)
        }
        var problems: [(field: String, reason: String)] = []
        var values: [String: String] = [:]
        for (field, problem) in fields {
            switch object[field] {
            case .string(let text)?:
                if let reason = problem(text) { problems.append((field, reason)) } else { values[field] = text }
            case nil, .null?: problems.append((field, "is missing"))
            case let other?: problems.append((field, "must be a string, not \(other.typeName)"))
            }
        }
        let known = Set(fields.map(\.name))
        for name in object.keys.sorted() where !known.contains(name) {
            problems.append((TextOutput.shortened(name, to: 40), "is not a field of an \(flag) object"))
        }
        guard problems.isEmpty else {
            throw ClientError("the \(flag) object \(source) cannot be used", hint: hint, fieldErrors: problems)
        }
        return values
    }
}
