import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// The stand-in provider as an OAuth 2 authorization server: RFC 7662 token introspection for
/// the clients it knows (HTTP Basic, RFC 6749 §2.3.1), and OpenID Connect UserInfo for a
/// token's holder, with its own code (not EchoRelay's) on the server's side of each exchange.
extension StandInProvider {
    public static let introspectionPath = "/oauth2/introspect"
    public static let userInfoPath = "/oauth2/userinfo"

    /// An access token the provider issued.
    struct AccessToken {
        let userID: String
        let clientID: String
        let expiresAt: Date
        var revoked = false
    }

    public var introspectionURL: String { "http://\(host)\(Self.introspectionPath)" }
    public var userInfoURL: String { "http://\(host)\(Self.userInfoPath)" }
    /// The `iss` of its introspection answers.
    public var issuer: String { "http://\(host)" }

    /// A client that may introspect tokens (EchoRelay's own credentials here).
    public func addOAuth2Client(id: String, secret: String) {
        state.withLock { $0.oauth2Clients[id] = secret }
    }

    /// A new access token of `userID`'s session, issued to the app `clientID`.
    public func issueAccessToken(for userID: String, clientID: String, lifetime: TimeInterval = 3600) -> String {
        let token = "at_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        state.withLock { $0.accessTokens[token] = AccessToken(userID: userID, clientID: clientID, expiresAt: Date() + lifetime) }
        return token
    }

    /// The token is dead from now on: the session ended.
    public func revoke(accessToken token: String) {
        state.withLock { $0.accessTokens[token]?.revoked = true }
    }

    private func liveToken(_ token: String) -> AccessToken? {
        state.withLock { $0.accessTokens[token] }.flatMap { $0.revoked || $0.expiresAt <= Date() ? nil : $0 }
    }

    func introspect(_ request: Request) async throws -> (Response, Answered) {
        guard let (clientID, secret) = Self.basicCredentials(request.headers[.authorization]),
              state.withLock({ $0.oauth2Clients[clientID] }) == secret
        else {
            return (Self.json(401, #"{"error":"invalid_client"}"#, headers: [.wwwAuthenticate: #"Basic realm="stand-in""#]),
                    Answered(status: 401, code: nil, why: "client credentials it does not know", userID: nil, phoneNumber: nil))
        }
        let body = try await request.body.collect(upTo: 64 * 1024)
        let form = Dictionary(ProviderOAuth.parseQuery(String(buffer: body)), uniquingKeysWith: { first, _ in first })
        guard let token = form["token"], let record = liveToken(token) else {
            return (Self.json(200, #"{"active":false}"#), Answered(status: 200, code: nil, why: "inactive", userID: nil, phoneNumber: nil))
        }
        let answer: [String: Any] = [
            "active": true, "sub": record.userID, "client_id": record.clientID, "iss": issuer,
            "exp": Int(record.expiresAt.timeIntervalSince1970), "token_type": "Bearer", "scope": "openid phone",
        ]
        return (Self.json(200, String(decoding: try JSONSerialization.data(withJSONObject: answer), as: UTF8.self)),
                Answered(status: 200, code: nil, why: "active", userID: record.userID, phoneNumber: nil))
    }

    func userInfo(_ request: Request) -> (Response, Answered) {
        let header = request.headers[.authorization] ?? ""
        guard header.lowercased().hasPrefix("bearer "), let record = liveToken(String(header.dropFirst(7))) else {
            return (Self.json(401, #"{"error":"invalid_token"}"#, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#]),
                    Answered(status: 401, code: nil, why: "no live token", userID: nil, phoneNumber: nil))
        }
        let phone = state.withLock { $0.accounts[record.userID] } ?? nil
        var claims: [String: Any] = ["sub": record.userID]
        if let phone {
            claims["phone_number"] = phone
            claims["phone_number_verified"] = true
        }
        return (Self.json(200, String(decoding: try! JSONSerialization.data(withJSONObject: claims), as: UTF8.self)),
                Answered(status: 200, code: nil, why: "the token's holder", userID: record.userID, phoneNumber: phone))
    }

    /// `Basic base64(client_id:client_secret)`, each part form-decoded after base64.
    static func basicCredentials(_ header: String?) -> (String, String)? {
        guard let header, header.lowercased().hasPrefix("basic "),
              let decoded = Data(base64Encoded: String(header.dropFirst(6))).flatMap({ String(data: $0, encoding: .utf8) }),
              let colon = decoded.firstIndex(of: ":")
        else { return nil }
        let decode = { (part: Substring) in String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
        guard let id = decode(decoded[..<colon]), let secret = decode(decoded[decoded.index(after: colon)...]) else { return nil }
        return (id, secret)
    }
}
