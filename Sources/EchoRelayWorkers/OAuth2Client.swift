import AsyncHTTPClient
import EchoRelayCore
import Foundation
import NIOCore
import NIOHTTP1

/// The OAuth 2 authorization server EchoRelay confirms events with, and its own client
/// credentials there (`ECHORELAY_OAUTH2_*`).
public struct AuthorizationServer: Sendable {
    /// The RFC 7662 introspection endpoint.
    public var introspectionURL: String
    /// The OpenID Connect UserInfo endpoint; nil: `phone.changed` cannot be verified over OAuth 2.
    public var userInfoURL: String?
    public var clientID: String
    public var clientSecret: Secret
    /// What an introspection answer must show.
    public var policy: OAuth2Policy

    public init(introspectionURL: String, userInfoURL: String?, clientID: String, clientSecret: Secret, policy: OAuth2Policy) {
        self.introspectionURL = introspectionURL
        self.userInfoURL = userInfoURL
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.policy = policy
    }
}

/// Asks the authorization server about a user's access token: introspection is a form `POST`
/// of `token` and `token_type_hint=access_token`, authenticated with EchoRelay's client
/// credentials as HTTP Basic (`client_secret_basic`, RFC 6749 §2.3.1); UserInfo is a `GET`
/// with the token as `Authorization: Bearer`. Redirects are not followed, answers are capped
/// at 64 KiB and each exchange is bounded by one timeout, as echo requests are.
public final class OAuth2Client: Sendable {
    public static let maximumAnswerSize = EchoClient.maximumAnswerSize

    let server: AuthorizationServer
    private let http: HTTPClient
    private let timeout: Duration
    /// `Basic base64(client_id:client_secret)`, each form-encoded first as §2.3.1 asks.
    private let basicCredentials: Secret

    public init(server: AuthorizationServer, timeout: Duration, connectionsPerHost: Int) {
        self.server = server
        self.timeout = timeout
        self.http = HTTPClient(eventLoopGroupProvider: .singleton,
                               configuration: BoundedExchange.providerConfiguration(timeout: timeout, connectionsPerHost: connectionsPerHost))
        let pair = OAuth1.percentEncode(server.clientID) + ":" + OAuth1.percentEncode(server.clientSecret.revealed)
        basicCredentials = Secret("Basic " + Data(pair.utf8).base64EncodedString())
    }

    /// RFC 7662 §2.1.
    public func introspect(_ token: Secret) async -> ProviderAnswer {
        var headers = Self.headers()
        headers.add(name: "Authorization", value: basicCredentials.revealed)
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let form = "token=" + OAuth1.percentEncode(token.revealed) + "&token_type_hint=access_token"
        return await send(url: server.introspectionURL, method: .POST, headers: headers, body: form)
    }

    /// OpenID Connect Core §5.3.1; nil when no UserInfo endpoint is configured.
    public func userInfo(_ token: Secret) async -> ProviderAnswer? {
        guard let url = server.userInfoURL else { return nil }
        var headers = Self.headers()
        headers.add(name: "Authorization", value: "Bearer " + token.revealed)
        return await send(url: url, method: .GET, headers: headers, body: nil)
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    private static func headers() -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "User-Agent", value: "EchoRelay/\(EchoRelayInfo.version)")
        return headers
    }

    private func send(url: String, method: HTTPMethod, headers: HTTPHeaders, body: String?) async -> ProviderAnswer {
        do {
            let request = try HTTPClient.Request(url: url, method: method, headers: headers, body: body.map { .string($0) })
            return await BoundedExchange(http: http).providerAnswer(request, keep: Self.maximumAnswerSize, timeout: timeout)
        } catch {
            return .noAnswer(String(describing: type(of: error)))
        }
    }
}
