import EchoRelayAPI
import EchoRelayCore
import EchoRelayServer
import Foundation

/// One user session as the client app holds it: the OAuth 1.0a token and its secret, and the
/// OAuth 2 access token of the same sign-in. Never printed.
struct DemoSession: Sendable {
    let userID: String
    let token: String
    let tokenSecret: String
    let accessToken: String

    static func randomHex(_ bytes: Int) -> String {
        (0..<bytes).map { _ in UInt8.random(in: .min ... .max) }.lowercaseHex
    }

    /// A session the provider never issued: what an attacker who wants to log a user out
    /// can make up.
    static func forged(userID: String) -> DemoSession {
        DemoSession(userID: userID, token: "\(userID)-" + DemoSession.randomHex(16), tokenSecret: DemoSession.randomHex(20),
                    accessToken: "at_" + DemoSession.randomHex(16))
    }

    /// What an event of this session carries to prove it, over `path`.
    func proof(_ path: DemoProvider, serviceProvider: String) throws(ClientError) -> (API.EchoCredentials?, API.OAuth2Credentials?) {
        switch path {
        case .echo: (try echo(serviceProvider: serviceProvider), nil)
        case .oauth2: (nil, API.OAuth2Credentials(access_token: accessToken))
        }
    }

    /// The OAuth Echo headers the client app hands its backend: a verify-credentials request
    /// to `serviceProvider`, signed now with a fresh nonce, as `echorelay echo-sign` does.
    func echo(serviceProvider: String) throws(ClientError) -> API.EchoCredentials {
        do {
            let authorization = try OAuth1.authorizationHeader(
                method: "GET", url: serviceProvider,
                consumerKey: DemoDefaults.consumerKey, consumerSecret: DemoDefaults.consumerSecret,
                token: token, tokenSecret: tokenSecret,
                nonce: OAuth1.randomNonce(), timestamp: String(Int64(Date().timeIntervalSince1970))
            )
            return API.EchoCredentials(service_provider: serviceProvider, authorization: authorization)
        } catch {
            throw ClientError("could not sign the echo request: \(error.reason)")
        }
    }
}
