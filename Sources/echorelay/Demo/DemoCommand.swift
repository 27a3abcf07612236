import ArgumentParser
import EchoRelayAPI
import EchoRelayCore
import EchoRelayServer
import EchoRelayStandIns
import Foundation
import Synchronization

/// `echorelay demo`: a one-command tour of the whole pipeline against a running
/// `echorelay serve --demo` — a stand-in identity provider pushes signed session updates,
/// EchoRelay re-verifies each with OAuth Echo (or OAuth 2, `--provider oauth2`), a stand-in
/// subscriber receives the verified ones, and a forged deactivation is refused.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Tour the whole pipeline against a server started with `echorelay serve --demo`.",
        discussion: """
            Start the server first, in another terminal, with `echorelay serve --demo`. On the embedded \
            store's first run it prints the values this command needs (an admin token and the ingest \
            secret); paste its export lines here, then run the demo:

              export ECHORELAY_INGEST_SECRETS=whsec_…
              export ECHORELAY_URL=http://127.0.0.1:8080
              export ECHORELAY_TOKEN=er_…
              echorelay demo

            The server must run on this machine: it reaches the demo's stand-ins on 127.0.0.1. The demo \
            then, printing each step as it goes:
              1. starts a stand-in identity provider on 127.0.0.1:8181 that checks OAuth 1.0a signatures \
            and answers verify-credentials requests as Digits does (with --provider oauth2: an OAuth 2 \
            authorization server that answers token introspection, checking EchoRelay's client credentials, \
            and OpenID Connect UserInfo);
              2. starts a stand-in subscriber (an app backend) on 127.0.0.1:8282 that checks the Standard \
            Webhooks signature of every delivery;
              3. registers that subscriber with EchoRelay (all three event types);
              4. for each demo user: signs in at the provider and pushes token.rotated, changes the phone \
            number and pushes phone.changed; one user's session then ends for real (account.deactivated, \
            verified), and another user gets a forged account.deactivated, signed with (or carrying) a token \
            the provider never issued, which EchoRelay must reject (unknown_token);
              5. waits (up to \(DemoTour.waitLimitText)) until EchoRelay has decided every event and delivered \
            every verified one;
              6. prints each user's timeline with the webhook-id the subscriber received;
              7. deletes its subscription and stops both stand-ins — also on failure and on Ctrl-C.

            Exit status: 0 when every genuine update was verified and arrived with a valid signature and \
            the forged deactivation was rejected; 1 otherwise (what went wrong on standard error); \
            130 when interrupted; 64 a usage error.
            """
    )

    @Option(help: "The EchoRelay server, started with `echorelay serve --demo`. (env: ECHORELAY_URL, default: http://127.0.0.1:8080)")
    var url: String?

    @Option(help: "An API token with the admin role: the demo registers a subscription and reads events. On the embedded store's first run, serve prints one as ECHORELAY_TOKEN=er_…. Prefer the environment: flags are visible in the process list. (env: ECHORELAY_TOKEN, required)")
    var token: String?

    @Option(help: "The ingest secret (whsec_…) the stand-in provider signs events with; from a comma-separated list, the first. It is the ECHORELAY_INGEST_SECRETS=whsec_… line serve prints on the embedded store's first run, or the value serve was started with. Prefer the environment. (env: ECHORELAY_INGEST_SECRETS, required)")
    var ingestSecret: String?

    @Option(help: "The port of the stand-in identity provider on 127.0.0.1. serve --demo accepts OAuth Echo only from \(DemoDefaults.providerHostAndPort); another port must also be in the server's ECHORELAY_ECHO_ALLOWED_HOSTS.")
    var providerPort = DemoDefaults.providerPort

    @Option(help: "The port of the stand-in subscriber on 127.0.0.1 (it receives at /hooks).")
    var subscriberPort = DemoDefaults.subscriberPort

    @Option(help: "How each event proves itself: echo (OAuth Echo headers, re-verified as Digits does) or oauth2 (the user's OAuth 2 access token, re-verified by token introspection and, for a phone number, UserInfo).")
    var provider: DemoProvider = .echo

    @Option(help: "How many demo users to make (2 to 50): each gets token.rotated and phone.changed; the first is deactivated for real, the second gets a forged deactivation.")
    var users = 3

    @Flag(help: "Print the final timeline as one JSON object on standard output (the steps go to standard error), for scripts.")
    var json = false

    func validate() throws {
        guard (2...50).contains(users) else {
            throw ValidationError("--users must be 2 to 50: one user is deactivated for real, another gets a forged deactivation")
        }
        for (flag, port) in [("--provider-port", providerPort), ("--subscriber-port", subscriberPort)] where !(1...65_535).contains(port) {
            throw ValidationError("\(flag) must be a port from 1 to 65535, got \(port)")
        }
        guard providerPort != subscriberPort else {
            throw ValidationError("--provider-port and --subscriber-port must differ")
        }
    }

    func run() async throws {
        let settings: DemoSettings
        do {
            settings = try self.settings()
        } catch {
            writeToStandardError(error.description)
            throw ExitCode.failure
        }
        let tour = DemoTour(settings: settings, output: DemoOutput(toStandardError: json))
        let work = Task { await tour.run() }
        let interrupt = DemoInterruptHandler { work.cancel() }
        let status = await work.value
        interrupt.remove()
        if status != 0 { throw ExitCode(status) }
    }

    /// Every setting, checked before anything starts. No message repeats a secret.
    func settings() throws(ClientError) -> DemoSettings {
        let token = try ClientOptions.token(token, missing: ClientError(
            "no API token: set ECHORELAY_TOKEN (or pass --token) to an admin token",
            hint: "`echorelay serve --demo` prints one on the embedded store's first run (ECHORELAY_TOKEN=er_…); or an operator makes one: echorelay tokens create --role admin --name demo"
        ))
        guard let secretText = Setting.list(ingestSecret, ServeSettings.ingestSecrets).first else {
            throw ClientError(
                "no ingest secret: set ECHORELAY_INGEST_SECRETS (or pass --ingest-secret) to the server's whsec_… secret",
                hint: "`echorelay serve --demo` prints it on the embedded store's first run (ECHORELAY_INGEST_SECRETS=whsec_…); otherwise use the value the server was started with"
            )
        }
        let secret: WebhookSecret
        do {
            secret = try WebhookSecret(secretText)
        } catch {
            throw ClientError("ECHORELAY_INGEST_SECRETS / --ingest-secret: \(error.description)")
        }
        let base = try ClientOptions.baseURL(url)
        return DemoSettings(baseURL: base, token: token, ingestSecret: secret, providerPort: providerPort,
                            subscriberPort: subscriberPort, users: users, json: json, provider: provider)
    }
}

struct DemoSettings: Sendable {
    let baseURL: String
    let token: String
    let ingestSecret: WebhookSecret
    let providerPort: Int
    let subscriberPort: Int
    let users: Int
    let json: Bool
    let provider: DemoProvider
}

/// How the demo's events prove themselves to EchoRelay.
enum DemoProvider: String, ExpressibleByArgument, CaseIterable, Sendable {
    case echo, oauth2
}

/// What the clean-up must undo or report, whatever happened: the subscription, and how many
/// of the stand-ins' servers were started (they stop as the tour's steps end).
final class DemoResources: Sendable {
    private let state = Mutex<(subscriptionID: String?, servers: Int)>((nil, 0))

    func serverStarted() { state.withLock { $0.servers += 1 } }
    func setSubscription(_ id: String) { state.withLock { $0.subscriptionID = id } }
    var subscriptionID: String? { state.withLock { $0.subscriptionID } }
    var servers: Int { state.withLock { $0.servers } }
}

/// The tour itself, step by step.
struct DemoTour: Sendable {
    static let stepCount = 7
    static let waitLimit: Duration = .seconds(30)
    static let waitLimitText = "30 s"
    static let pollInterval: Duration = .milliseconds(250)

    let settings: DemoSettings
    let output: DemoOutput

    /// Runs every step and cleans up; returns the exit status.
    func run() async -> Int32 {
        do {
            return try await APIClient.withHTTPClient { http in
                let server = DemoServerAPI(baseURL: settings.baseURL, token: settings.token,
                                           ingestSecret: settings.ingestSecret, http: http)
                let resources = DemoResources()
                let result: Result<DemoReport, any Error>
                do {
                    result = .success(try await tour(server, resources))
                } catch {
                    result = .failure(error)
                }
                let interrupted = Task.isCancelled
                // Not cancelled, even after Ctrl-C: an unstructured task does not inherit it.
                let cleanedUp = await Task { await cleanUp(server, resources) }.value

                switch result {
                case .success(let report):
                    output.line()
                    output.line(report.summary)
                    if !report.ok {
                        writeToStandardError((["error: the demo did not go as expected:"] + report.problems.map { "  \($0)" }
                                                 + report.hints.map { "hint: \($0)" }).joined(separator: "\n"))
                        return 1
                    }
                    guard cleanedUp else { return 1 }
                    DemoNextSteps.lines(report, baseURL: settings.baseURL).forEach { output.line($0) }
                    return 0
                case .failure where interrupted:
                    writeToStandardError("interrupted")
                    return 130
                case .failure(let error as ClientError):
                    writeToStandardError(error.description)
                    return 1
                case .failure(let error):
                    writeToStandardError("error: \(error)")
                    return 1
                }
            }
        } catch {
            writeToStandardError("error: \(error)")
            return 1
        }
    }

    private func tour(_ server: DemoServerAPI, _ resources: DemoResources) async throws -> DemoReport {
        // 1. The identity provider.
        let provider = StandInProvider.demo(port: settings.providerPort, output: output)
        output.step(1, "Starting a stand-in identity provider on http://127.0.0.1:\(settings.providerPort)")
        return try await DemoServers.serve(
            "stand-in identity provider", provider.router(), port: settings.providerPort, flag: "--provider-port", resources
        ) {
            switch settings.provider {
            case .echo:
                output.line("    It answers GET /1.1/sdk/account.json as Digits does, checking each OAuth 1.0a signature (HMAC-SHA1).")
                if settings.providerPort != DemoDefaults.providerPort {
                    output.line("    note: serve --demo accepts OAuth Echo only from \(DemoDefaults.providerHostAndPort); for port \(settings.providerPort) the server needs ECHORELAY_ECHO_ALLOWED_HOSTS=127.0.0.1:\(settings.providerPort) and ECHORELAY_ECHO_ALLOW_HTTP=1.")
                }
            case .oauth2:
                output.line("    It answers POST \(StandInProvider.introspectionPath) (RFC 7662), checking EchoRelay's client credentials, and GET \(StandInProvider.userInfoPath) (OpenID Connect).")
                if settings.providerPort != DemoDefaults.providerPort {
                    output.line("    note: serve --demo introspects with \(DemoDefaults.introspectionURL); for port \(settings.providerPort) the server needs ECHORELAY_OAUTH2_INTROSPECTION_URL=http://127.0.0.1:\(settings.providerPort)\(StandInProvider.introspectionPath), the matching ECHORELAY_OAUTH2_USERINFO_URL and ECHORELAY_OAUTH2_ALLOW_HTTP=1.")
                }
            }

            // 2. The subscriber.
            let subscriber = StandInSubscriber.demo(port: settings.subscriberPort, output: output)
            output.step(2, "Starting a stand-in subscriber (an app backend) on \(subscriber.url())")
            return try await DemoServers.serve(
                "stand-in subscriber", subscriber.router(), port: settings.subscriberPort, flag: "--subscriber-port", resources
            ) {
                output.line("    It checks the Standard Webhooks signature of every delivery with the subscription's secret.")
                return try await tour(server, resources, provider, subscriber)
            }
        }
    }

    /// Steps 3 to 6, while both stand-ins serve.
    private func tour(
        _ server: DemoServerAPI, _ resources: DemoResources, _ provider: StandInProvider, _ subscriber: StandInSubscriber
    ) async throws -> DemoReport {
        // 3. The subscription.
        output.step(3, "Registering the subscriber with EchoRelay at \(server.baseURL) (POST /v1/subscriptions)")
        let created = try await server.createSubscription(url: subscriber.url())
        resources.setSubscription(created.id)
        do {
            _ = try WebhookSecret(created.secret ?? "")
            subscriber.setSecrets([created.secret ?? ""])
        } catch {
            throw ClientError("the server's answer holds no subscription secret, or one that is not whsec_…: \(error.description)")
        }
        output.line("    Subscription \(created.id): token.rotated, phone.changed and account.deactivated, in order per user.")
        output.line("    Its secret went to the subscriber only.")

        // 4. The updates.
        output.step(4, "Pushing session updates for \(settings.users) users (POST /v1/events, signed with the ingest secret)")
        switch settings.provider {
        case .echo: output.line("    Each carries OAuth Echo headers signed as a client app signs them; EchoRelay re-asks the provider with them.")
        case .oauth2: output.line("    Each carries the user's OAuth 2 access token; EchoRelay introspects it with the provider (and asks UserInfo for a phone number).")
        }
        let run = DemoSession.randomHex(3)
        let userIDs = (1...settings.users).map { "demo-\(run)-\($0)" }
        var planned: [DemoPlannedEvent] = []
        var sessions: [String: DemoSession] = [:]
        var counter = 0
        func push(_ type: EventType, _ session: DemoSession, data: [String: String] = [:], forged: Bool = false,
                  note: String) async throws -> DemoPlannedEvent {
            counter += 1
            let (echo, oauth2) = try session.proof(settings.provider, serviceProvider: provider.digitsURL)
            let event = DemoEventBody(
                id: "evt_demo_\(run)_\(counter)", type: type.rawValue, user_id: session.userID,
                occurred_at: RFC3339.format(Date()), data: data, echo: echo, oauth2: oauth2
            )
            let receipt = try await server.push(event)
            output.line("    \(session.userID) \(type.rawValue) #\(receipt.sequence) accepted — \(note)")
            let plannedEvent = DemoPlannedEvent(eventID: event.id, userID: session.userID, type: type, forged: forged,
                                                sequence: receipt.sequence)
            planned.append(plannedEvent)
            return plannedEvent
        }

        for userID in userIDs {
            let phone = Self.randomPhoneNumber()
            let session = provider.openSession(userID: userID, phoneNumber: phone)
            sessions[userID] = session
            _ = try await push(.tokenRotated, session, note: "signed in at the provider: a new session token")
        }
        for userID in userIDs {
            let phone = Self.randomPhoneNumber()
            provider.addAccount(userID: userID, phoneNumber: phone)
            _ = try await push(.phoneChanged, sessions[userID]!, data: ["phone_number": phone],
                               note: "the provider changed the phone number to \(phone) first")
        }
        let victim = userIDs[1]
        _ = try await push(.accountDeactivated, DemoSession.forged(userID: victim), forged: true,
                           note: settings.provider == .echo ? "FORGED: its echo is signed with a token the provider never issued"
                               : "FORGED: it carries an access token the provider never issued")

        // The genuine deactivation: the provider ends a session EchoRelay has seen verified.
        let leaving = userIDs[0]
        output.line("    Waiting for EchoRelay to verify \(leaving)'s session before the provider ends it …")
        let verified = try await waitUntilDecided(planned.filter { $0.userID == leaving }, server)
        provider.endSession(sessions[leaving]!)
        _ = try await push(.accountDeactivated, sessions[leaving]!, note: verified
            ? "the provider revoked the session token EchoRelay had verified"
            : "the provider revoked the session token, which EchoRelay did not verify (see below)")

        // 5. Wait.
        output.step(5, "Waiting (up to \(Self.waitLimitText)) until EchoRelay has decided every event and delivered every verified one")
        let (timelines, details, timedOut) = try await waitUntilSettled(planned, userIDs: userIDs, server, subscriber,
                                                                        subscriptionID: created.id)
        if !timedOut { output.line("    Done.") }

        // 6. The timeline.
        output.step(6, "The timeline of each user, as EchoRelay recorded it (GET /v1/users/{user}/events, GET /v1/events/{id})")
        var states: [String: API.User] = [:]
        for userID in userIDs { states[userID] = try? await server.user(id: userID) }
        let report = DemoReport.build(
            userIDs: userIDs, planned: planned, timelines: timelines, details: details, userStates: states,
            subscriptionID: created.id, subscriber: subscriber, providerPort: settings.providerPort, timedOut: timedOut
        )
        output.line(report.text())
        if settings.json {
            FileHandle.standardOutput.write(report.json() + Data("\n".utf8))
        }
        return report
    }

    /// Step 7, run whatever happened before: deletes the subscription, and reports the servers
    /// stopped. Returns false when the subscription could not be deleted.
    private func cleanUp(_ server: DemoServerAPI, _ resources: DemoResources) async -> Bool {
        output.step(7, "Cleaning up")
        var ok = true
        if let id = resources.subscriptionID {
            do {
                try await server.deleteSubscription(id: id)
                output.line("    Deleted subscription \(id).")
            } catch {
                ok = false
                writeToStandardError("error: could not delete the demo's subscription \(id): \(error.message)\nhint: delete it with DELETE /v1/subscriptions/\(id)")
            }
        }
        let servers = resources.servers
        if servers > 0 { output.line("    Stopped the stand-in \(servers == 2 ? "provider and subscriber" : "provider").") }
        return ok
    }

    /// Waits until EchoRelay has decided these events (all of one user); returns whether it
    /// verified any of them, and so knows the user's token.
    private func waitUntilDecided(_ events: [DemoPlannedEvent], _ server: DemoServerAPI) async throws -> Bool {
        guard let userID = events.first?.userID else { return false }
        let ids = Set(events.map(\.eventID))
        let deadline = ContinuousClock.now + Self.waitLimit
        while true {
            let items = try await server.timeline(userID: userID).filter { ids.contains($0.id) }
            if items.count == ids.count, items.allSatisfy({ $0.status != EventStatus.pending.rawValue }) {
                return items.contains { $0.status == EventStatus.verified.rawValue }
            }
            guard ContinuousClock.now < deadline else {
                throw ClientError(
                    "EchoRelay did not decide \(userID)'s events within \(Self.waitLimitText)",
                    hint: "is the server's verify worker running (serve --role all, the default)? With serve --demo it re-asks the provider on \(DemoDefaults.providerHostAndPort), so it must run on this machine"
                )
            }
            try await Task.sleep(for: Self.pollInterval)
        }
    }

    /// Waits until every event is decided and every verified one delivered to the demo's
    /// subscription (or its delivery has ended otherwise), or the time limit passes. Returns
    /// the users' timelines and the events' details as they last stood.
    private func waitUntilSettled(
        _ planned: [DemoPlannedEvent], userIDs: [String], _ server: DemoServerAPI, _ subscriber: StandInSubscriber,
        subscriptionID: String
    ) async throws -> ([String: [API.TimelineEvent]], [String: API.Event], Bool) {
        let deadline = ContinuousClock.now + Self.waitLimit
        var details: [String: API.Event] = [:]
        var settled: Set<String> = []
        while true {
            var timelines: [String: [API.TimelineEvent]] = [:]
            for userID in userIDs { timelines[userID] = try await server.timeline(userID: userID) }
            let items = timelines.values.flatMap { $0 }
            for item in items where !settled.contains(item.id) && item.status != EventStatus.pending.rawValue {
                let detail = try await server.event(id: item.id)
                details[item.id] = detail
                guard detail.status == EventStatus.verified.rawValue else {
                    settled.insert(item.id)
                    continue
                }
                let delivery = detail.deliveries.first { $0.subscription_id == subscriptionID && $0.replay_id == nil }
                if let delivery, delivery.status != DeliveryStatus.pending.rawValue,
                   delivery.status != DeliveryStatus.delivered.rawValue || !subscriber.received(webhookID: delivery.webhook_id).isEmpty {
                    settled.insert(item.id)
                }
            }
            let expected = Set(planned.map(\.eventID))
            if expected.isSubset(of: settled) { return (timelines, details, false) }
            guard ContinuousClock.now < deadline else {
                let waiting = planned.filter { !settled.contains($0.eventID) }.map { "\($0.userID) #\($0.sequence) \($0.type.rawValue)" }
                output.line("    Timed out; still waiting for: \(waiting.joined(separator: ", ")).")
                return (timelines, details, true)
            }
            try await Task.sleep(for: Self.pollInterval)
        }
    }

    /// A phone number in E.164 from the 555 range, which no one is given.
    static func randomPhoneNumber() -> String {
        "+1555" + String(format: "%07d", Int.random(in: 0..<10_000_000))
    }
}
