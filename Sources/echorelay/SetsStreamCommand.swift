import ArgumentParser
import EchoRelayAPI
import EchoRelayCore
import Foundation

/// `echorelay sets stream`: the stream EchoRelay registers with its Shared Signals transmitter
/// (SSF 1.0), through the API's `/v1/sets/stream`: the server calls the transmitter's
/// endpoints, found from ECHORELAY_SET_ISSUER, with ECHORELAY_SET_TRANSMITTER_TOKEN.
struct SetsStreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Register, read, change and verify the stream with the Shared Signals transmitter (a client of the API).",
        discussion: """
            Example:
              echorelay sets stream create --delivery poll
              echorelay sets stream verify

            The server must receive Shared Signals (ECHORELAY_SET_ISSUER, ECHORELAY_SET_AUDIENCE) \
            and hold the transmitter's token (ECHORELAY_SET_TRANSMITTER_TOKEN). Needs a token with \
            the admin role (ECHORELAY_TOKEN). \(ClientHelp.exitStatus)
            """,
        subcommands: [Create.self, Show.self, Status.self, Update.self, Verify.self]
    )

    static func show(_ stream: API.SecurityEventStream) -> String {
        var pairs: [(String, String)] = [
            ("stream", stream.stream_id), ("delivery", stream.delivery), ("endpoint", stream.endpoint_url),
            ("status", TextOutput.orDash(stream.status) + (stream.status_reason.map { " (\($0))" } ?? "")),
            ("status checked", TextOutput.time(stream.status_checked_at)),
            ("events requested", stream.events_requested.count.description),
            ("events delivered", stream.events_delivered.isEmpty ? "-" : stream.events_delivered.map(shortName).joined(separator: ", ")),
        ]
        if let verification = stream.verification {
            pairs.append(("last verification", verification.outcome + (verification.elapsed_ms.map { " after \($0) ms" } ?? "")
                          + " (" + TextOutput.time(verification.requested_at) + ")"))
        } else {
            pairs.append(("last verification", "never"))
        }
        return TextOutput.block(pairs)
    }

    static func shortName(_ uri: String) -> String { uri.split(separator: "/").last.map(String.init) ?? uri }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register EchoRelay's stream with the transmitter, asking for every event type EchoRelay maps.",
            discussion: """
                push: the transmitter pushes SETs to this relay's POST /v1/sets (--endpoint-url, by \
                default the --url this command talks to, plus /v1/sets), with the server's \
                ECHORELAY_SET_PUSH_TOKEN as its bearer token. poll: the transmitter gives its poll \
                endpoint, which the server keeps and starts polling at once, with no other setting.
                """
        )

        @Option(help: ArgumentHelp("How SETs reach EchoRelay: push (RFC 8935) or poll (RFC 8936).", valueName: "push|poll"))
        var delivery: String

        @Option(help: ArgumentHelp("For push: the public URL of this relay's POST /v1/sets.", valueName: "url"))
        var endpointURL: String?

        @Option(help: "A description the transmitter keeps with the stream.")
        var description: String?

        @OptionGroup var client: ClientOptions

        func validate() throws {
            guard ["push", "poll"].contains(delivery) else {
                throw ValidationError("--delivery must be push or poll, got \"\(delivery)\"")
            }
            if delivery == "poll", endpointURL != nil {
                throw ValidationError("--endpoint-url is for push only: a poll stream's endpoint is the transmitter's")
            }
        }

        func run() async throws {
            try await client.run { api in
                let endpoint = delivery == "push" ? (endpointURL ?? api.url(["v1", "sets"])) : nil
                let request = API.StreamCreateRequest(delivery: delivery, endpoint_url: endpoint, description: description)
                let answer = try await api.post(["v1", "sets", "stream"], body: request)
                if client.json { return printJSON(answer.body) }
                let stream = try answer.decode(API.SecurityEventStream.self)
                print("stream \(stream.stream_id) registered for \(stream.delivery) delivery")
                print(SetsStreamCommand.show(stream))
                print("check it end to end with: echorelay sets stream verify")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the registered stream, its status and its last verification.")

        @OptionGroup var client: ClientOptions

        func run() async throws {
            try await client.run { api in
                let answer = try await api.get(["v1", "sets", "stream"])
                if client.json { return printJSON(answer.body) }
                print(SetsStreamCommand.show(try answer.decode(API.SecurityEventStream.self)))
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask the transmitter for the stream's status, or set it (--set enabled|paused|disabled)."
        )

        @Option(name: .customLong("set"), help: ArgumentHelp("The new status: enabled, paused or disabled.", valueName: "status"))
        var newStatus: String?

        @Option(help: "Why, when setting the status.")
        var reason: String?

        @OptionGroup var client: ClientOptions

        func validate() throws {
            if let newStatus, !["enabled", "paused", "disabled"].contains(newStatus) {
                throw ValidationError("--set must be enabled, paused or disabled, got \"\(newStatus)\"")
            }
            if reason != nil, newStatus == nil { throw ValidationError("--reason goes with --set") }
        }

        func run() async throws {
            try await client.run { api in
                let answer = if let newStatus {
                    try await api.post(["v1", "sets", "stream", "status"], body: API.StreamStatusRequest(status: newStatus, reason: reason))
                } else {
                    try await api.get(["v1", "sets", "stream", "status"])
                }
                if client.json { return printJSON(answer.body) }
                let stream = try answer.decode(API.SecurityEventStream.self)
                print("stream \(stream.stream_id) is \(TextOutput.orDash(stream.status))" + (stream.status_reason.map { ": \($0)" } ?? ""))
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change what the stream asks for, its description or its push URL.")

        @Option(name: .customLong("event-type"), help: ArgumentHelp(
            "An event type URI to request; repeat it for each. The stream then asks for these only.", valueName: "uri"))
        var eventTypes: [String] = []

        @Option(help: "A new description.")
        var description: String?

        @Option(help: ArgumentHelp("For push: a new public URL of this relay's POST /v1/sets.", valueName: "url"))
        var endpointURL: String?

        @OptionGroup var client: ClientOptions

        func validate() throws {
            if eventTypes.isEmpty, description == nil, endpointURL == nil {
                throw ValidationError("give at least one of --event-type, --description and --endpoint-url")
            }
        }

        func run() async throws {
            try await client.run { api in
                let request = API.StreamUpdateRequest(events_requested: eventTypes.isEmpty ? nil : eventTypes,
                                                      description: description, endpoint_url: endpointURL)
                let answer = try await api.patch(["v1", "sets", "stream"], body: request)
                if client.json { return printJSON(answer.body) }
                print(SetsStreamCommand.show(try answer.decode(API.SecurityEventStream.self)))
            }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask the transmitter for a verification event with a fresh random state, and wait until it arrives.",
            discussion: """
                Passes when a verification event arrives, pushed or polled, with the same state; a \
                wrong or missing state, or none in time, is a failure (exit status 1).
                """
        )

        @Option(help: ArgumentHelp("How long to wait for the event, 1 to 25 seconds.", valueName: "seconds"))
        var timeout = 20

        @OptionGroup var client: ClientOptions

        func validate() throws {
            guard (1 ... 25).contains(timeout) else { throw ValidationError("--timeout must be from 1 to 25 seconds, got \(timeout)") }
        }

        func run() async throws {
            try await client.run { api in
                let answer = try await api.post(["v1", "sets", "stream", "verify"], body: API.StreamVerifyRequest(timeout_seconds: timeout))
                let verification = try answer.decode(API.StreamVerification.self)
                if client.json {
                    printJSON(answer.body)
                } else if verification.outcome == "passed" {
                    print("verified: the verification event arrived with the same state after \(verification.elapsed_ms ?? 0) ms")
                }
                switch verification.outcome {
                case "passed": return
                case "wrong_state":
                    throw ClientError("verification failed: a verification event arrived with another state",
                                      hint: "the transmitter did not echo the state it was sent; check the stream with: echorelay sets stream show")
                case "missing_state":
                    throw ClientError("verification failed: a verification event arrived without a state",
                                      hint: "the transmitter must send back the state it was asked for (SSF 1.0 §8.1.4)")
                default:
                    throw ClientError("verification failed: no verification event arrived within \(timeout) s",
                                      hint: "check the stream's status (echorelay sets stream status) and, for poll, that the server polls (its log)")
                }
            }
        }
    }
}
