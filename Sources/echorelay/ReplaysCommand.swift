import ArgumentParser
import EchoRelayAPI
import EchoRelayCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `echorelay replays`: follows and cancels replays made with `echorelay replay`. A client
/// of the HTTP API.
struct ReplaysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replays",
        abstract: "Show a replay's progress (optionally until it ends) or cancel it (a client of the API).",
        discussion: "Needs a token with the support or admin role (ECHORELAY_TOKEN), or the app token that started a recover of its own subscription. \(ClientHelp.exitStatus)",
        subcommands: [Show.self, Cancel.self]
    )

    /// The exit status of `show --wait` when the replay did not deliver everything.
    static let incompleteExitCode: Int32 = 3

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a replay; with --wait, follow it until it is no longer running.",
            discussion: """
                With --wait the progress goes to standard error: a bar redrawn in place on a terminal, \
                plain lines when standard error is a file or a pipe. The replay itself is printed on \
                standard output when it ends (with --json, the server's last answer).

                Exit status: 0 shown (with --wait: the replay completed and every delivery succeeded); \
                1 the request failed (error: and hint: on standard error); 3 with --wait, the replay \
                ended cancelled or with failed deliveries; 64 a usage error.
                """
        )

        @Argument(help: ArgumentHelp("The replay's id (rpl_…).", valueName: "id"))
        var id: String

        @Flag(help: "Poll until the replay is no longer running, showing its progress.")
        var wait = false

        @Option(help: ArgumentHelp("With --wait, the time between polls, such as 1s or 500ms.", valueName: "duration"))
        var interval: String = "1s"

        @OptionGroup var client: ClientOptions

        func validate() throws {
            guard let duration = DurationText.parse(interval), duration >= .milliseconds(100) else {
                throw ValidationError("--interval must be a duration of 100ms or more, such as 1s or 500ms; got \"\(interval)\"")
            }
        }

        func run() async throws {
            let interval = DurationText.parse(interval)!  // checked in validate()
            try await client.run { api in
                if wait { return try await ReplaysCommand.follow(id, api, interval: interval, json: client.json) }
                let answer = try await api.get(["v1", "replays", id])
                if client.json { printJSON(answer.body) } else { print(try answer.decode(API.Replay.self).text) }
            }
        }
    }

    /// Polls a replay until it is no longer running, drawing its progress on standard error,
    /// then prints it; throws exit status 3 if it was cancelled or some deliveries failed.
    static func follow(_ id: String, _ api: APIClient, interval: Duration, json: Bool) async throws {
        var answer = try await api.get(["v1", "replays", id])
        var replay = try answer.decode(API.Replay.self)
        var progress = ProgressReporter()
        defer { progress.finish() }  // also when a poll fails: the error starts a line of its own
        while replay.state == "running" {
            progress.report(replay)
            try await Task.sleep(for: interval)
            answer = try await api.get(["v1", "replays", id])
            replay = try answer.decode(API.Replay.self)
        }
        progress.report(replay)
        progress.finish()
        if json { printJSON(answer.body) } else { print(replay.text) }
        // Scripts tell a clean replay from one that needs a look by the exit status.
        if replay.state == "cancelled" {
            writeToStandardError("replay \(replay.id) was cancelled")
            throw ExitCode(ReplaysCommand.incompleteExitCode)
        }
        if replay.failed > 0 {
            writeToStandardError("replay \(replay.id): \(TextOutput.count(replay.failed, "delivery", "deliveries")) failed (see: echorelay dead-letters list)")
            throw ExitCode(ReplaysCommand.incompleteExitCode)
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a running replay: deliveries it has not sent yet are not sent.",
            discussion: ClientHelp.exitStatus
        )

        @Argument(help: ArgumentHelp("The replay's id (rpl_…).", valueName: "id"))
        var id: String

        @Option(help: "Why: required, and kept in the audit log with who did it.")
        var reason: String?

        @OptionGroup var client: ClientOptions

        func validate() throws {
            try Reason.validate(reason, doing: "cancel it")
        }

        func run() async throws {
            try await client.run { api in
                let answer = try await api.post(["v1", "replays", id, "cancel"], body: API.ReasonRequest(reason: reason ?? ""))
                if client.json { return printJSON(answer.body) }
                print(try answer.decode(API.Replay.self).text)
            }
        }
    }
}

/// Draws a replay's progress on standard error while `show --wait` polls.
struct ProgressReporter {
    /// A terminal gets one line redrawn in place; a file or pipe gets a line per change.
    let redraws = isatty(STDERR_FILENO) == 1
    private var lastLine: String?
    private var drewOnTerminal = false

    static let barWidth = 30

    mutating func report(_ replay: API.Replay) {
        let done = replay.delivered + replay.failed
        let counts = "\(done)/\(replay.matched) delivered \(replay.delivered) failed \(replay.failed)"
        if redraws {
            let filled = replay.matched == 0 ? Self.barWidth : min(Self.barWidth, done * Self.barWidth / replay.matched)
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: Self.barWidth - filled)
            // \r and "erase line" redraw in place; nothing is written when nothing changed.
            let line = "[\(bar)] \(counts) \(replay.state)"
            guard line != lastLine else { return }
            FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
            drewOnTerminal = true
            lastLine = line
        } else {
            let line = "replay \(replay.id): \(replay.state) \(counts) (sent \(replay.sent))"
            guard line != lastLine else { return }
            writeToStandardError(line)
            lastLine = line
        }
    }

    /// Ends the redrawn line, so what follows starts on a line of its own.
    mutating func finish() {
        if drewOnTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
        drewOnTerminal = false
    }
}

extension API.Replay {
    /// The replay as `replays show` prints it (and the answers of a bulk replay and a cancel).
    var text: String {
        var filterText = "-"
        if let filter, filter != .null, let encoded = try? canonicalJSON(filter) {
            filterText = String(decoding: encoded, as: UTF8.self)
        }
        return TextOutput.block([
            ("replay", id), ("kind", kind), ("state", state), ("reason", reason),
            ("by", "\(actor.name) (\(actor.role))"),
            ("event", TextOutput.orDash(event_id)), ("filter", filterText),
            ("matched", String(matched)), ("sent", String(sent)), ("delivered", String(delivered)), ("failed", String(failed)),
            ("created at", created_at), ("finished at", TextOutput.orDash(finished_at)),
        ])
    }
}
