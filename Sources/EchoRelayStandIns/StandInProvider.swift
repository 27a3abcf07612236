import Crypto
import EchoRelayCore
import EchoRelayQueue
import Foundation
import Hummingbird
import Synchronization

/// A stand-in identity provider on an ephemeral loopback port, answering OAuth Echo
/// requests like Digits (`/1.1/sdk/account.json`) and Twitter
/// (`/1.1/account/verify_credentials.json`). It checks every OAuth 1.0a signature with its
/// own code (`ProviderOAuth` below, not EchoRelay's), checks the timestamp window, can be
/// told to fail, hang or redirect, and records every request it receives. It is also an
/// OAuth 2 authorization server (`StandInProvider+OAuth2.swift`): token introspection at
/// `POST /oauth2/introspect` and OpenID Connect UserInfo at `GET /oauth2/userinfo`.
public final class StandInProvider: Sendable {
    public enum Mode: Sendable, Equatable {
        case normal
        /// Every request gets this answer.
        case respond(status: Int, body: String)
        /// Requests get no answer until the mode changes (or 30 s pass).
        case hang
        /// `200` at once, then one byte of body every 100 ms until the mode changes (or 30 s
        /// pass): an answer that never finishes.
        case trickle
        case redirect
    }

    public struct RecordedRequest: Sendable {
        public let method: String
        public let uri: String
        public let authorization: String?
    }

    struct Token {
        let secret: String
        let userID: String
        var alive: Bool
    }

    struct State {
        var consumers: [String: String] = [:]
        var accounts: [String: String?] = [:]  // user id → phone number
        var tokens: [String: Token] = [:]
        var mode: Mode = .normal
        var failuresLeft = 0
        var failureStatus = 503
        var tokenFailures: [String: Int] = [:]
        var requests: [RecordedRequest] = []
        var port = 0
        var observer: (@Sendable (Answered) -> Void)?
        /// OAuth 2: the clients that may introspect (id → secret), and the access tokens issued.
        var oauth2Clients: [String: String] = [:]
        var accessTokens: [String: AccessToken] = [:]
    }

    /// What a request was answered, and why, for a watcher (the demo prints it).
    public struct Answered: Sendable {
        /// The request, in short: `GET account.json`, `POST introspect`, `GET userinfo`.
        public internal(set) var request = ""
        public let status: Int
        /// The provider's error code (32, 89, 135…); nil for a `200`.
        public let code: Int?
        public let why: String
        /// The account shown by a `200`.
        public let userID: String?
        public let phoneNumber: String?
    }

    public static let timestampWindow: TimeInterval = 300
    let state = Mutex(State())
    private let releaseHanging = WakeSignal()

    public init() {}

    // MARK: Set-up

    public func addConsumer(key: String, secret: String) {
        state.withLock { $0.consumers[key] = secret }
    }

    /// Adds the account, or changes the phone number of one already added.
    public func addAccount(userID: String, phoneNumber: String?) {
        state.withLock { $0.accounts[userID] = phoneNumber }
    }

    /// A new access token and secret for a user's session.
    public func issueToken(for userID: String) -> (token: String, secret: String) {
        let token = "\(userID)-" + UUID().uuidString.lowercased()
        let secret = UUID().uuidString.lowercased()
        state.withLock { $0.tokens[token] = Token(secret: secret, userID: userID, alive: true) }
        return (token, secret)
    }

    /// The token is invalid from now on (rotated, revoked, or the account deactivated).
    public func expire(token: String) {
        state.withLock { $0.tokens[token]?.alive = false }
    }

    public func setMode(_ mode: Mode) {
        state.withLock { $0.mode = mode }
        if mode != .hang { releaseHanging.wake() }
    }

    /// The next `count` requests are answered with `status` (an outage), then normally.
    public func failNext(_ count: Int, status: Int = 503) {
        state.withLock {
            $0.failuresLeft = count
            $0.failureStatus = status
        }
    }

    /// The next `count` requests signed with `token` are answered 503, then normally.
    public func failNext(_ count: Int, forToken token: String) {
        state.withLock { $0.tokenFailures[token] = count }
    }

    public var requests: [RecordedRequest] { state.withLock { $0.requests } }
    public var port: Int { state.withLock { $0.port } }
    public var host: String { "127.0.0.1:\(port)" }
    public var digitsURL: String { "http://\(host)/1.1/sdk/account.json" }

    // MARK: Running

    /// Serves for the length of `body`.
    public func run<Result: Sendable>(_ body: @Sendable (StandInProvider) async throws -> Result) async throws -> Result {
        try await LoopbackServer.run(router(), onStop: { self.releaseHanging.wake() }) { port in
            serving(onPort: port)
            return try await body(self)
        }
    }

    /// Its routes, for a server of the caller's (the demo's), which calls `serving(onPort:)`.
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post(RouterPath(Self.introspectionPath)) { request, _ in
            await self.answer(request, "POST introspect") { try await self.introspect($0) }
        }
        router.get(RouterPath(Self.userInfoPath)) { request, _ in await self.answer(request, "GET userinfo") { self.userInfo($0) } }
        router.get("**") { request, _ in await self.answer(request, "GET account.json") { await self.echo($0) } }
        return router
    }

    /// The port its server listens on, for the URLs above.
    public func serving(onPort port: Int) {
        state.withLock { $0.port = port }
    }

    /// Called with every echo request's answer and the reason for it.
    public func onAnswer(_ observer: @escaping @Sendable (Answered) -> Void) {
        state.withLock { $0.observer = observer }
    }

    /// Records the request, answers as told (a failure, a hang…) or with `decide`, and tells
    /// the watcher of the answer to `name` (the request, in short).
    private func answer(_ request: Request, _ name: String, _ decide: (Request) async throws -> (Response, Answered)) async -> Response {
        var answer: (response: Response, answered: Answered)
        if let told = await told(request) {
            answer = told
        } else {
            do {
                answer = try await decide(request)
            } catch {
                answer = (Self.json(400, "{}"), Answered(status: 400, code: nil, why: "an unreadable request", userID: nil, phoneNumber: nil))
            }
        }
        answer.answered.request = name
        state.withLock { $0.observer }?(answer.answered)
        return answer.response
    }

    /// The answer the provider was told to give (`failNext`, `setMode`), or nil to answer normally.
    private func told(_ request: Request) async -> (Response, Answered)? {
        func answered(_ status: Int, _ body: String, _ why: String) -> (Response, Answered) {
            (Self.json(status, body), Answered(status: status, code: nil, why: why, userID: nil, phoneNumber: nil))
        }
        let authorization = request.headers[.authorization]
        let (mode, failure) = state.withLock { state -> (Mode, Int?) in
            state.requests.append(RecordedRequest(method: request.method.rawValue, uri: request.uri.description, authorization: authorization))
            guard state.failuresLeft > 0 else { return (state.mode, nil) }
            state.failuresLeft -= 1
            return (state.mode, state.failureStatus)
        }
        if let failure { return answered(failure, #"{"errors":[{"code":131,"message":"Internal error."}]}"#, "told to fail") }
        switch mode {
        case .normal:
            return nil
        case .respond(let status, let body):
            return answered(status, body, "told to answer so")
        case .hang:
            await releaseHanging.wait(upTo: .seconds(30))
            return answered(503, #"{"errors":[{"code":130,"message":"Over capacity."}]}"#, "told to hang")
        case .trickle:
            return (Response(status: .ok, body: ResponseBody { writer in
                let end = ContinuousClock.now + .seconds(30)
                while self.state.withLock({ $0.mode }) == .trickle, ContinuousClock.now < end {
                    try await writer.write(ByteBuffer(string: " "))
                    try await Task.sleep(for: .milliseconds(100))
                }
                try await writer.finish(nil)
            }), Answered(status: 200, code: nil, why: "told to trickle", userID: nil, phoneNumber: nil))
        case .redirect:
            return (Response(status: .found, headers: [.location: "http://example.invalid/elsewhere"]),
                    Answered(status: 302, code: nil, why: "told to redirect", userID: nil, phoneNumber: nil))
        }
    }

    /// An OAuth Echo request: its signature, timestamp and token checked.
    private func echo(_ request: Request) async -> (Response, Answered) {
        func refused(_ status: Int, _ code: Int, _ message: String, _ why: String) -> (Response, Answered) {
            (Self.error(status, code, message), Answered(status: status, code: code, why: why, userID: nil, phoneNumber: nil))
        }
        func answered(_ status: Int, _ body: String, _ why: String) -> (Response, Answered) {
            (Self.json(status, body), Answered(status: status, code: nil, why: why, userID: nil, phoneNumber: nil))
        }
        guard let authorization = request.headers[.authorization], let parameters = ProviderOAuth.parseHeader(authorization) else {
            return refused(401, 32, "Could not authenticate you.", "no readable OAuth header")
        }
        let (consumerSecret, tokenRecord, accounts, tokenFailure) = state.withLock { state in
            let token = parameters["oauth_token"] ?? ""
            let failing = (state.tokenFailures[token] ?? 0) > 0
            if failing { state.tokenFailures[token]! -= 1 }
            return (state.consumers[parameters["oauth_consumer_key"] ?? ""], state.tokens[token], state.accounts, failing)
        }
        if tokenFailure { return answered(503, #"{"errors":[{"code":130,"message":"Over capacity."}]}"#, "told to fail this token") }
        guard let consumerSecret else { return refused(401, 32, "Could not authenticate you.", "a consumer key it does not know") }
        guard let timestamp = parameters["oauth_timestamp"].flatMap(TimeInterval.init),
              abs(Date().timeIntervalSince1970 - timestamp) <= Self.timestampWindow
        else { return refused(401, 135, "Timestamp out of bounds.", "timestamp outside the 5-minute window") }
        guard let tokenRecord else { return refused(401, 89, "Invalid or expired token.", "a token it never issued") }

        let url = "http://\(request.head.authority ?? host)\(request.uri.path)"
        let query = request.uri.query.map(ProviderOAuth.parseQuery) ?? []
        let expected = ProviderOAuth.signature(
            method: request.method.rawValue, url: url, parameters: query + parameters.map { ($0.key, $0.value) },
            consumerSecret: consumerSecret, tokenSecret: tokenRecord.secret
        )
        guard let presented = parameters["oauth_signature"].flatMap({ Data(base64Encoded: $0) }),
              let expected = Data(base64Encoded: expected), presented == expected
        else { return refused(401, 32, "Could not authenticate you.", "bad signature for \(tokenRecord.userID)'s token") }
        guard tokenRecord.alive, let phone = accounts[tokenRecord.userID] else {
            return refused(401, 89, "Invalid or expired token.", "\(tokenRecord.userID)'s token was revoked")
        }

        var account: [String: Any] = ["id_str": tokenRecord.userID, "created_at": "Mon Nov 23 10:15:30 +0000 2026"]
        if let number = Int64(tokenRecord.userID) { account["id"] = number }
        if request.uri.path.hasSuffix("/sdk/account.json") {
            account["phone_number"] = phone ?? NSNull()
        } else {
            account["screen_name"] = "user\(tokenRecord.userID)"
        }
        return (Self.json(200, String(decoding: try! JSONSerialization.data(withJSONObject: account), as: UTF8.self)),
                Answered(status: 200, code: nil, why: "signature checked", userID: tokenRecord.userID, phoneNumber: phone))
    }

    private static func error(_ status: Int, _ code: Int, _ message: String) -> Response {
        json(status, #"{"errors":[{"code":\#(code),"message":"\#(message)"}]}"#)
    }

    static func json(_ status: Int, _ body: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}

/// The provider's own OAuth 1.0a verification (RFC 5849), written separately from
/// EchoRelay's so that a bug in one is caught by the other.
enum ProviderOAuth {
    /// RFC 3986's unreserved characters, the only ones OAuth leaves as they are.
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// Every other UTF-8 byte as upper-case `%XX` (Foundation's encoder, not EchoRelay's).
    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved)!
    }

    /// `OAuth k="v", …` → [k: v], or nil if it is not that shape.
    static func parseHeader(_ header: String) -> [String: String]? {
        guard header.lowercased().hasPrefix("oauth ") else { return nil }
        var result: [String: String] = [:]
        for part in header.dropFirst(6).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            let name = String(pair[..<equals])
            var value = String(pair[pair.index(after: equals)...])
            guard value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") else { return nil }
            value = String(value.dropFirst().dropLast())
            guard let decoded = value.removingPercentEncoding, result[name] == nil else { return nil }
            if name != "realm" { result[name] = decoded }
        }
        return result
    }

    static func parseQuery(_ query: String) -> [(String, String)] {
        query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }

    static func signature(method: String, url: String, parameters: [(String, String)], consumerSecret: String, tokenSecret: String) -> String {
        let signed: [(String, String)] = parameters.filter { $0.0 != "oauth_signature" && $0.0 != "realm" }
        let encoded: [(String, String)] = signed.map { (encode($0.0), encode($0.1)) }
        let sorted = encoded.sorted { (a: (String, String), b: (String, String)) -> Bool in a.0 == b.0 ? a.1 < b.1 : a.0 < b.0 }
        let normalized = sorted.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let base = [method.uppercased(), encode(url), encode(normalized)].joined(separator: "&")
        let key = SymmetricKey(data: Data((encode(consumerSecret) + "&" + encode(tokenSecret)).utf8))
        return Data(HMAC<Insecure.SHA1>.authenticationCode(for: Data(base.utf8), using: key)).base64EncodedString()
    }
}
