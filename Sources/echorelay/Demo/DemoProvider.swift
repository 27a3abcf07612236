import EchoRelayCore
import EchoRelayServer
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// The demo's stand-in identity provider: it issues user sessions (an access token and its
/// secret), changes phone numbers, revokes tokens, and answers OAuth Echo verify-credentials
/// requests — `GET /1.1/sdk/account.json`, Digits style — by really checking the OAuth 1.0a
/// signature (HMAC-SHA1 under the demo consumer secret and the token's secret), as a real
/// provider does:
///
/// | request                                                  | answer                              |
/// |----------------------------------------------------------|-------------------------------------|
/// | unparseable header, another consumer key or method       | `401` code 32                       |
/// | `oauth_timestamp` more than 5 minutes away               | `401` code 135                      |
/// | a token it never issued                                  | `401` code 89 (invalid or expired)  |
/// | a token it issued, wrong signature                       | `401` code 32                       |
/// | a token it revoked, right signature                      | `401` code 89                       |
/// | a live token, right signature                            | `200 {"id_str", "phone_number"}`    |
///
/// It holds no credentials of anyone's: everything lives in memory for the length of the demo.
final class DemoProvider: Sendable {
    static let path = "/1.1/sdk/account.json"
    static let timestampWindow: TimeInterval = 300

    private struct Token {
        let secret: String
        let userID: String
        var alive: Bool
    }

    private struct State {
        var phoneNumbers: [String: String] = [:]
        var tokens: [String: Token] = [:]
    }

    let port: Int
    private let output: DemoOutput
    private let state = Mutex(State())

    init(port: Int, output: DemoOutput) {
        self.port = port
        self.output = output
    }

    /// The `echo.service_provider` of every event: where EchoRelay re-asks.
    var serviceProviderURL: String { "http://127.0.0.1:\(port)\(Self.path)" }

    // MARK: The provider's own actions

    /// A user signs in: a new session (access token and secret). Any earlier token of the
    /// user stays valid until revoked, as with Digits.
    func openSession(userID: String, phoneNumber: String) -> DemoSession {
        let session = DemoSession(userID: userID, token: "\(userID)-" + Self.randomHex(16), tokenSecret: Self.randomHex(20))
        state.withLock {
            $0.phoneNumbers[userID] = phoneNumber
            $0.tokens[session.token] = Token(secret: session.tokenSecret, userID: userID, alive: true)
        }
        return session
    }

    func changePhoneNumber(of userID: String, to phoneNumber: String) {
        state.withLock { $0.phoneNumbers[userID] = phoneNumber }
    }

    /// The session ends (the account is deactivated): the token is dead from now on.
    func revoke(_ session: DemoSession) {
        state.withLock { $0.tokens[session.token]?.alive = false }
    }

    // MARK: Serving

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get(RouterPath(Self.path)) { request, _ in self.answer(request) }
        return router
    }

    private func answer(_ request: Request) -> Response {
        func refuse(_ code: Int, _ message: String, _ why: String) -> Response {
            output.live("provider", "GET account.json → 401 code \(code) (\(why))")
            return DemoJSON.providerError(.unauthorized, code: code, message)
        }
        guard let authorization = request.headers[.authorization],
              let header = try? OAuthAuthorizationHeader.parse(authorization) else {
            return refuse(32, "Could not authenticate you.", "no readable OAuth header")
        }
        guard header.consumerKey == DemoDefaults.consumerKey, header.signatureMethod == OAuth1.hmacSHA1Method else {
            return refuse(32, "Could not authenticate you.", "not the demo app's consumer key, or not HMAC-SHA1")
        }
        guard let timestamp = header.timestamp.flatMap(TimeInterval.init),
              abs(Date().timeIntervalSince1970 - timestamp) <= Self.timestampWindow else {
            return refuse(135, "Timestamp out of bounds.", "timestamp outside the 5-minute window")
        }
        let (record, phoneNumbers) = state.withLock { state in (header.token.flatMap { state.tokens[$0] }, state.phoneNumbers) }
        guard let record else {
            return refuse(89, "Invalid or expired token.", "a token it never issued")
        }
        // The URL as this request reached us, which is what the client signed.
        let url = "http://\(request.head.authority ?? "127.0.0.1:\(port)")\(request.uri.path)"
            + (request.uri.query.map { "?" + $0 } ?? "")
        let signed = (try? OAuth1.isValidSignature(
            of: header, method: request.method.rawValue, url: url,
            consumerSecret: DemoDefaults.consumerSecret, tokenSecret: record.secret
        )) ?? false
        guard signed else {
            return refuse(32, "Could not authenticate you.", "bad signature for \(record.userID)'s token")
        }
        guard record.alive else {
            return refuse(89, "Invalid or expired token.", "\(record.userID)'s token was revoked")
        }
        let phone = phoneNumbers[record.userID]
        output.live("provider", "GET account.json → 200 \(record.userID), \(phone ?? "no phone") (signature checked)")
        return DemoJSON.response(.ok, ["id_str": .string(record.userID), "phone_number": phone.map(JSONValue.string) ?? .null])
    }

    static func randomHex(_ bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }.lowercaseHex
    }
}

/// One user session as the client app holds it: the access token and its secret. Never
/// printed.
struct DemoSession: Sendable {
    let userID: String
    let token: String
    let tokenSecret: String

    /// A session the provider never issued: what an attacker who wants to log a user out
    /// can make up.
    static func forged(userID: String) -> DemoSession {
        DemoSession(userID: userID, token: "\(userID)-" + DemoProvider.randomHex(16), tokenSecret: DemoProvider.randomHex(20))
    }

    /// The OAuth Echo headers the client app hands its backend: a verify-credentials request
    /// to `serviceProvider`, signed now with a fresh nonce, as `echorelay echo-sign` does.
    func echo(serviceProvider: String) throws(ClientError) -> DemoEcho {
        do {
            let authorization = try OAuth1.authorizationHeader(
                method: "GET", url: serviceProvider,
                consumerKey: DemoDefaults.consumerKey, consumerSecret: DemoDefaults.consumerSecret,
                token: token, tokenSecret: tokenSecret,
                nonce: OAuth1.randomNonce(), timestamp: String(Int64(Date().timeIntervalSince1970))
            )
            return DemoEcho(service_provider: serviceProvider, authorization: authorization)
        } catch {
            throw ClientError("could not sign the echo request: \(error.reason)")
        }
    }
}

/// An event's `echo` object.
struct DemoEcho: Encodable, Sendable {
    let service_provider: String
    let authorization: String
}
