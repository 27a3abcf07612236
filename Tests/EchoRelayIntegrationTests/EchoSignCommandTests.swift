import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// `echorelay echo-sign`, run as a child process the way a developer or an identity provider
/// runs it. Needs no database.
@Suite struct EchoSignCommandTests {
    /// The photo request of RFC 5849 §1.2.
    static let rfcURL = "http://photos.example.net/photos?file=vacation.jpg&size=original"
    static let rfcCredentials = [
        "--consumer-key", "dpf43f3p2l4k3l03", "--consumer-secret", "kd94hf93k423kf44",
        "--token", "nnch734d00sl2jdk", "--token-secret", "pfkkdhi9sl3r4s00",
    ]
    static let rfcHeader = """
        OAuth oauth_consumer_key="dpf43f3p2l4k3l03", oauth_nonce="chapoH", \
        oauth_signature="MdpQcU8iPSUjWoN%2FUDMsK2sui9I%3D", oauth_signature_method="HMAC-SHA1", \
        oauth_timestamp="137131202", oauth_token="nnch734d00sl2jdk"
        """

    @Test func reproducesTheSignatureOfRFC5849Section1_2() async throws {
        let result = try await ChildProcess.run(
            ["echo-sign"] + Self.rfcCredentials
                + ["--url", Self.rfcURL, "--no-version", "--nonce", "chapoH", "--timestamp", "137131202"]
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == """
            X-Auth-Service-Provider: \(Self.rfcURL)
            X-Verify-Credentials-Authorization: \(Self.rfcHeader)

            """)
        let authorizationLine = result.stdout.split(separator: "\n")[1]
        let header = try OAuthAuthorizationHeader.parse(String(authorizationLine.dropFirst("X-Verify-Credentials-Authorization: ".count)))
        #expect(header.signature == "MdpQcU8iPSUjWoN/UDMsK2sui9I=")
        // Plain http is worth a word: EchoRelay refuses it unless allowed for local testing.
        #expect(result.stderr.contains("plain http"))
    }

    @Test func readsTheCredentialsFromTheEnvironment() async throws {
        let result = try await ChildProcess.run(
            ["echo-sign", "--url", Self.rfcURL, "--no-version", "--nonce", "chapoH", "--timestamp", "137131202"],
            environment: [
                "ECHORELAY_ECHO_CONSUMER_KEY": "dpf43f3p2l4k3l03", "ECHORELAY_ECHO_CONSUMER_SECRET": "kd94hf93k423kf44",
                "ECHORELAY_ECHO_TOKEN": "nnch734d00sl2jdk", "ECHORELAY_ECHO_TOKEN_SECRET": "pfkkdhi9sl3r4s00",
            ]
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(Self.rfcHeader))
    }

    @Test func jsonIsAnEchoObjectWithTheParametersInTheSignedQuery() async throws {
        let url = "https://api.digits.com/1.1/sdk/account.json"
        let before = Date().timeIntervalSince1970
        let result = try await ChildProcess.run(["echo-sign"] + Self.rfcCredentials + [
            "--url", url, "--json", "--param", "include_email=true", "--param", "name=Jörg Ü&=+",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)

        let echo = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String])
        #expect(Set(echo.keys) == ["service_provider", "authorization"])
        let serviceProvider = try #require(echo["service_provider"])
        #expect(serviceProvider == url + "?include_email=true&name=J%C3%B6rg%20%C3%9C%26%3D%2B")

        let header = try OAuthAuthorizationHeader.parse(try #require(echo["authorization"]))
        #expect(header.consumerKey == "dpf43f3p2l4k3l03")
        #expect(header.token == "nnch734d00sl2jdk")
        #expect(header.version == "1.0")
        #expect(header.signatureMethod == "HMAC-SHA1")
        // A fresh nonce and the current time, by default.
        #expect(header.nonce?.count == 32)
        let timestamp = try #require(header.timestamp.flatMap(Double.init))
        #expect(abs(timestamp - before) < 60)
        // The provider, given exactly the service_provider URL, finds the signature good: the
        // extra parameters are signed where it sees them.
        #expect(try OAuth1.isValidSignature(
            of: header, method: "GET", url: serviceProvider, consumerSecret: "kd94hf93k423kf44", tokenSecret: "pfkkdhi9sl3r4s00"
        ))
        #expect(try !OAuth1.isValidSignature(
            of: header, method: "GET", url: url, consumerSecret: "kd94hf93k423kf44", tokenSecret: "pfkkdhi9sl3r4s00"
        ))
    }

    @Test func twoRunsUseDifferentNonces() async throws {
        let arguments = ["echo-sign", "--json", "--url", "https://api.example.com/verify"] + Self.rfcCredentials
        let first = try await ChildProcess.run(arguments)
        let second = try await ChildProcess.run(arguments)
        #expect(first.status == 0 && second.status == 0)
        #expect(first.stdout != second.stdout)
    }

    @Test(arguments: [
        (["--param", "no-equals-sign"], "--param must be NAME=VALUE"),
        (["--param", "=value"], "--param must be NAME=VALUE"),
        (["--param", "oauth_callback=x"], "must not start with oauth_"),
        (["--timestamp", "soon"], "--timestamp"),
        (["--nonce", ""], "--nonce"),
        (["--method", "GET /"], "--method"),
    ])
    func refusesBadArgumentsClearly(extra: [String], expected: String) async throws {
        let result = try await ChildProcess.run(["echo-sign", "--url", "https://api.example.com/v"] + Self.rfcCredentials + extra)
        #expect(result.status != 0)
        #expect(result.stderr.contains(expected), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test(arguments: [
        ("ftp://api.example.com/v", "--url: the URL's scheme must be http or https"),
        ("api.example.com/v", "--url: the URL must be absolute"),
        ("https://api.example.com/v#f", "--url must not have a #fragment"),
        ("https://api.example.com/a b", "--url: the URL's path"),
    ])
    func refusesABadURL(url: String, expected: String) async throws {
        let result = try await ChildProcess.run(["echo-sign", "--url", url] + Self.rfcCredentials)
        #expect(result.status != 0)
        #expect(result.stderr.contains(expected), "\(result.stderr)")
    }

    @Test func namesAMissingCredentialWithoutPrintingTheOthers() async throws {
        let result = try await ChildProcess.run([
            "echo-sign", "--url", "https://api.example.com/v", "--consumer-key", "ck",
            "--consumer-secret", "consumer-secret-31337", "--token", "t",
        ])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--token-secret"))
        #expect(result.stderr.contains("ECHORELAY_ECHO_TOKEN_SECRET"))
        #expect(!result.stderr.contains("consumer-secret-31337"))
    }

    @Test func helpDocumentsEveryOption() async throws {
        let result = try await ChildProcess.run(["echo-sign", "--help"])
        #expect(result.status == 0)
        for name in ["--consumer-key", "--consumer-secret", "--token", "--token-secret", "--url", "--method", "--param",
                     "--nonce", "--timestamp", "--no-version", "--json",
                     "ECHORELAY_ECHO_CONSUMER_KEY", "ECHORELAY_ECHO_CONSUMER_SECRET", "ECHORELAY_ECHO_TOKEN",
                     "ECHORELAY_ECHO_TOKEN_SECRET"] {
            #expect(result.stdout.contains(name), "echo-sign --help does not mention \(name)")
        }
        #expect(try await ChildProcess.run(["--help"]).stdout.contains("echo-sign"))
    }
}
