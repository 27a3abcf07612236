import Foundation
import NIOHTTP1
#if canImport(Glibc)
import Glibc
#endif

/// An OAuth 2 authorization server on loopback built on oauthlib's `IntrospectEndpoint` and
/// OpenID Connect `UserInfoEndpoint` (`Tests/Tools/oauth2_server.py`, a real child process):
/// code nobody here wrote answers EchoRelay's introspection and UserInfo requests. Its
/// clients are fixed at start; tokens, accounts and outages are set through its control API.
public final class OAuthlibAuthorizationServer: Sendable {
    public let port: Int
    public let issuer: String
    private let child: ChildProcess
    private let http: HTTPTestClient

    public var introspectionURL: String { "http://127.0.0.1:\(port)/introspect" }
    public var userInfoURL: String { "http://127.0.0.1:\(port)/userinfo" }

    /// - clients: the client ids and secrets that may introspect (EchoRelay's own).
    public init(clients: [String: String], issuer: String = "https://idp.test") async throws {
        let arguments = ["--issuer", issuer] + clients.flatMap { ["--client", "\($0.key):\($0.value)"] }
        (child, port) = try await PythonTool.start("oauth2_server.py", arguments, what: "the oauthlib authorization server",
                                                   install: "oauthlib")
        self.issuer = issuer
        http = HTTPTestClient(port: port)
    }

    deinit {
        child.signal(SIGKILL)
    }

    @discardableResult
    private func control(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        let response = try await http.send(.POST, "/control/" + path, headers: [("Content-Type", "application/json")],
                                           body: Array(try JSONSerialization.data(withJSONObject: body)))
        guard response.status == 200, let json = response.json else {
            throw TestSetupError("the authorization server's /control/\(path) answered \(response.status): \(response.text)")
        }
        return json
    }

    /// A new access token of `user`, issued to `clientID`, that expires in `expiresIn` seconds;
    /// or, with `expiresInFromFirstUse`, that many seconds after it is first introspected or used
    /// (so it is certainly live then, however slow the machine).
    public func issueToken(
        user: String, clientID: String, expiresIn: Double = 3600, expiresInFromFirstUse: Double? = nil, issuer: String? = nil,
        scopes: [String] = ["openid", "phone"]
    ) async throws -> String {
        var body: [String: Any] = ["user": user, "client_id": clientID, "expires_in": expiresIn, "scopes": scopes]
        if let expiresInFromFirstUse { body["expires_in_from_first_use"] = expiresInFromFirstUse }
        if let issuer { body["issuer"] = issuer }
        guard let token = try await control("tokens", body)["access_token"] as? String else {
            throw TestSetupError("the authorization server issued no token")
        }
        return token
    }

    /// The token is dead from now on: the session ended.
    public func revoke(_ token: String) async throws {
        try await control("revoke", ["access_token": token])
    }

    /// What UserInfo says of `user`.
    public func setAccount(user: String, phoneNumber: String?, verified: Bool = true) async throws {
        var body: [String: Any] = ["user": user, "phone_number_verified": verified]
        if let phoneNumber { body["phone_number"] = phoneNumber }
        try await control("accounts", body)
    }

    /// The next `count` introspection or UserInfo requests get `status` and no body after
    /// `delay` seconds, or (`drop`) have their connection closed with no answer.
    public func outage(_ count: Int, status: Int? = 503, delay: Double = 0, drop: Bool = false) async throws {
        var body: [String: Any] = ["count": count, "delay": delay, "drop": drop]
        if let status { body["status"] = status }
        try await control("outage", body)
    }

    /// One request the server received at its protocol endpoints.
    public struct Received: Sendable {
        public let method: String
        public let path: String
        /// Header names lower-cased.
        public let headers: [String: String]
        public let form: [String: String]
    }

    public func requests() async throws -> [Received] {
        let response = try await http.get("/control/requests")
        guard let items = try JSONSerialization.jsonObject(with: response.body) as? [[String: Any]] else {
            throw TestSetupError("the authorization server's request log is not a JSON array: \(response.text)")
        }
        return items.map { item in
            let headers = (item["headers"] as? [String: String] ?? [:]).reduce(into: [String: String]()) { $0[$1.key.lowercased()] = $1.value }
            return Received(method: item["method"] as? String ?? "", path: item["path"] as? String ?? "", headers: headers,
                            form: item["form"] as? [String: String] ?? [:])
        }
    }
}
