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
    /// answer for, with fresh OAuth Echo headers for the same user session.
    struct Reverify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify an unverifiable event again, with fresh OAuth Echo headers.",
            discussion: """
                An event is unverifiable when the provider could not be asked (it was down, or the \
                headers' timestamp was outside its window). Its echo headers were erased and have \
                expired anyway, so it needs fresh ones for the same user session. --echo names a file \
                holding {"service_provider": …, "authorization": …} — what `echorelay echo-sign --json` \
                prints — or - for standard input:

                  echorelay echo-sign --url "$VERIFY_URL" --json \\
                    | echorelay events reverify evt_01HZX3 --reason "provider back" --echo -

                The authorization header is a credential: it is sent to the server and never printed. \
                Only an unverifiable event can be re-verified; follow it with `echorelay events show ID`.

                Needs a token with the support or admin role (ECHORELAY_TOKEN). \(ClientHelp.exitStatus)
                """
        )

        @Argument(help: ArgumentHelp("The unverifiable event's id (evt_…).", valueName: "id"))
        var id: String

        @Option(help: "Why: required, and kept in the audit log with who did it.")
        var reason: String?

        @Option(help: ArgumentHelp(
            "A file holding the echo object {\"service_provider\", \"authorization\"}, as `echorelay echo-sign --json` prints it; - reads standard input. (required)",
            valueName: "file"
        ))
        var echo: String?

        @OptionGroup var client: ClientOptions

        func validate() throws {
            try Reason.validate(reason, doing: "re-verify it")
            guard let echo, !echo.isEmpty else {
                throw ValidationError("--echo is required: a file with fresh echo headers (echorelay echo-sign --json prints them), or - for standard input")
            }
        }

        func run() async throws {
            try await client.run { api in
                let echo = try EchoFile.read(self.echo ?? "-")  // required in validate()
                let answer = try await api.post(["v1", "events", id, "reverify"], body: API.ReverifyRequest(reason: reason ?? "", echo: echo))
                if client.json { return printJSON(answer.body) }
                let receipt = try answer.decode(API.ReverifyAccepted.self)
                print("event \(receipt.id) is \(receipt.status) verification again: the provider will be asked with the fresh echo headers")
                print("follow it with: echorelay events show \(receipt.id)")
            }
        }
    }
}

/// The `--echo` of `events reverify`: a small JSON object read from a file or standard input.
/// Its `authorization` is a credential, so no message here quotes a value — only the file
/// and the name of the field that is missing or wrong.
enum EchoFile {
    /// An echo object is a few hundred bytes; anything this large is the wrong file.
    static let maximumBytes = 64 << 10

    static func read(_ path: String) throws(ClientError) -> API.EchoCredentials {
        let source = path == "-" ? "on standard input" : "in \"\(path)\""
        var handle = FileHandle.standardInput
        if path == "-" {
            if isatty(STDIN_FILENO) == 1 {
                writeToStandardError("reading the echo object from standard input (end it with Ctrl-D)")
            }
        } else {
            guard let file = FileHandle(forReadingAtPath: path) else {
                throw ClientError("cannot read the --echo file \"\(path)\": no such file, or not readable", hint: "give a file, or - to read standard input")
            }
            handle = file
        }
        defer { if path != "-" { try? handle.close() } }
        let bytes: Data
        do {
            bytes = try handle.read(upToCount: maximumBytes + 1) ?? Data()
        } catch {
            throw ClientError("cannot read the echo object \(source): \(error.localizedDescription)")
        }
        return try parse(bytes, source: source)
    }

    static func parse(_ bytes: Data, source: String) throws(ClientError) -> API.EchoCredentials {
        let hint = "--echo must hold one JSON object {\"service_provider\": …, \"authorization\": …}, as echorelay echo-sign --json prints it"
        guard bytes.count <= maximumBytes else {
            throw ClientError("the echo object \(source) is larger than \(maximumBytes / 1024) KiB; an echo object is a few hundred bytes", hint: hint)
        }
        guard !bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else {
            throw ClientError("there is no echo object \(source): it is empty", hint: hint)
        }
        // Parsed here rather than by JSONDecoder, whose messages may quote the text.
        guard String(data: bytes, encoding: .utf8) != nil, let document = try? JSONValue.parse(bytes) else {
            throw ClientError("the echo object \(source) is not valid JSON", hint: hint)
        }
        guard let object = document.objectValue else {
            throw ClientError("the echo \(source) must be a JSON object, not \(document.typeName)", hint: hint)
        }
        var problems: [(field: String, reason: String)] = []
        /// The string in `field`, or nil with its problem noted (`problem` checks the string).
        func string(_ field: String, _ problem: (String) -> String?) -> String? {
            switch object[field] {
            case .string(let text)?:
                guard let reason = problem(text) else { return text }
                problems.append((field, reason))
            case nil, .null?: problems.append((field, "is missing"))
            case let other?: problems.append((field, "must be a string, not \(other.typeName)"))
            }
            return nil
        }
        let serviceProvider = string("service_provider", EventFieldRules.serviceProviderProblem)
        let authorization = string("authorization") { header in
            header.hasPrefix("OAuth ") ? nil : "must be an OAuth 1.0a header starting with \"OAuth \""
        }
        for name in object.keys.sorted() where name != "service_provider" && name != "authorization" {
            problems.append((TextOutput.shortened(name, to: 40), "is not a field of an echo object"))
        }
        guard problems.isEmpty, let serviceProvider, let authorization else {
            throw ClientError("the echo object \(source) cannot be used", hint: hint, fieldErrors: problems)
        }
        return API.EchoCredentials(service_provider: serviceProvider, authorization: authorization)
    }
}
