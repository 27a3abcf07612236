import ArgumentParser
import EchoRelayCore
import EchoRelayServer
import Foundation

/// `echorelay echo-sign`: the OAuth Echo headers a client app would hand to its backend for
/// one user session, for testing EchoRelay end to end and for identity providers checking
/// their own signing.
struct EchoSignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo-sign",
        abstract: "Print OAuth Echo headers (RFC 5849, HMAC-SHA1) for a user session.",
        discussion: """
            Signs a request to the provider's verify-credentials URL as a Digits or Twitter client does, \
            and prints the two OAuth Echo headers:

              X-Auth-Service-Provider: <url>
              X-Verify-Credentials-Authorization: OAuth …

            With --json it prints {"authorization": …, "service_provider": …}, the `echo` object of an \
            event. The four credentials can also come from ECHORELAY_ECHO_* environment variables, which \
            other users of the machine cannot see; the other options are flags only.

            The request of RFC 5849 §1.2, signed MdpQcU8iPSUjWoN/UDMsK2sui9I= there:
              echorelay echo-sign --no-version --nonce chapoH --timestamp 137131202 \\
                --consumer-key dpf43f3p2l4k3l03 --consumer-secret kd94hf93k423kf44 \\
                --token nnch734d00sl2jdk --token-secret pfkkdhi9sl3r4s00 \\
                --url 'http://photos.example.net/photos?file=vacation.jpg&size=original'
            """
    )

    @Option(help: "The app's OAuth consumer key (oauth_consumer_key). (env: ECHORELAY_ECHO_CONSUMER_KEY, required)")
    var consumerKey: String?

    @Option(help: "The app's OAuth consumer secret. (env: ECHORELAY_ECHO_CONSUMER_SECRET, required)")
    var consumerSecret: String?

    @Option(help: "The user session's access token (oauth_token). (env: ECHORELAY_ECHO_TOKEN, required)")
    var token: String?

    @Option(help: "The user session's access token secret. (env: ECHORELAY_ECHO_TOKEN_SECRET, required)")
    var tokenSecret: String?

    @Option(help: "The provider's verify-credentials URL, https://… (plain http only for local testing). (required)")
    var url: String

    @Option(help: "The HTTP method of the verify request.")
    var method = "GET"

    @Option(
        name: .customLong("param"),
        help: ArgumentHelp(
            "An extra signed parameter, added to the query of the --url so that the provider sees it. Repeatable.",
            valueName: "name=value"
        )
    )
    var parameters: [String] = []

    @Option(help: "The oauth_nonce, for reproducible output. (default: 32 random hex digits)")
    var nonce: String?

    @Option(help: "The oauth_timestamp in Unix seconds, for reproducible output. (default: now)")
    var timestamp: String?

    @Flag(help: "Leave out oauth_version=\"1.0\", which RFC 5849 makes optional and its examples omit. (default: sent, as Digits and Twitter clients do)")
    var noVersion = false

    @Flag(help: "Print one JSON object {\"authorization\": …, \"service_provider\": …}, ready for an event's echo.")
    var json = false

    func validate() throws {
        for parameter in parameters {
            guard let equals = parameter.firstIndex(of: "="), equals != parameter.startIndex else {
                throw ValidationError("--param must be NAME=VALUE with a non-empty NAME, got \"\(parameter)\"")
            }
            guard !parameter.hasPrefix("oauth_") else {
                throw ValidationError("--param names must not start with oauth_: RFC 5849 keeps that prefix for protocol parameters")
            }
        }
        if let nonce, nonce.isEmpty { throw ValidationError("--nonce must not be empty") }
        if let timestamp, timestamp.isEmpty || !timestamp.allSatisfy({ $0.isASCII && $0.isNumber }) {
            throw ValidationError("--timestamp must be whole seconds since 1970, like 1795428930")
        }
        guard !method.isEmpty, method.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw ValidationError("--method must be an HTTP method such as GET")
        }
        guard !url.contains("#") else { throw ValidationError("--url must not have a #fragment") }
        do {
            _ = try OAuth1.baseStringURI(url)
        } catch {
            throw ValidationError("--url: \(error.reason)")
        }
    }

    func run() throws {
        let extra = parameters.map { parameter in
            let equals = parameter.firstIndex(of: "=")!  // checked in validate()
            return (String(parameter[..<equals]), String(parameter[parameter.index(after: equals)...]))
        }
        let serviceProvider = OAuth1.appendingQueryParameters(extra, to: url)
        let authorization = try OAuth1.authorizationHeader(
            method: method, url: serviceProvider,
            consumerKey: try Self.required(consumerKey, flag: "--consumer-key", variable: "ECHORELAY_ECHO_CONSUMER_KEY"),
            consumerSecret: try Self.required(consumerSecret, flag: "--consumer-secret", variable: "ECHORELAY_ECHO_CONSUMER_SECRET"),
            token: try Self.required(token, flag: "--token", variable: "ECHORELAY_ECHO_TOKEN"),
            tokenSecret: try Self.required(tokenSecret, flag: "--token-secret", variable: "ECHORELAY_ECHO_TOKEN_SECRET"),
            nonce: nonce ?? OAuth1.randomNonce(),
            timestamp: timestamp ?? String(Int64(Date().timeIntervalSince1970)),
            includeVersion: !noVersion
        )
        if serviceProvider.lowercased().hasPrefix("http://") {
            writeToStandardError("warning: EchoRelay re-verifies over plain http only when that is allowed for local testing")
        }

        if json {
            let echo = ["service_provider": serviceProvider, "authorization": authorization]
            print(String(decoding: try canonicalJSON(echo), as: UTF8.self))
        } else {
            print("X-Auth-Service-Provider: \(serviceProvider)")
            print("X-Verify-Credentials-Authorization: \(authorization)")
        }
    }

    /// The flag, else the environment variable (empty counts as unset), else a clear error.
    static func required(_ flag: String?, flag name: String, variable: String) throws -> String {
        guard let value = Setting.value(flag, variable) else {
            throw ConfigurationError(setting: name, reason: "is required (or set \(variable))")
        }
        return value
    }
}
