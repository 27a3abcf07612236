import AsyncHTTPClient
import EchoRelayAPI
import EchoRelayCore
import Foundation
import NIOCore
import NIOHTTP1

/// The support API over HTTP, shared by every client verb (`events`, `replay`, `replays`,
/// `dead-letters`, `audit`). It sends the bearer token on every request and turns every
/// failure — an unreachable server, a problem+json answer, an unreadable body — into a
/// `ClientError` that says what happened and what to check. The token is never part of any
/// message.
struct APIClient: Sendable {
    /// Where requests go, without a trailing slash (a path prefix is kept).
    let baseURL: String
    /// The token, sent as `Authorization: Bearer …` and nowhere else.
    private let token: String
    private let http: HTTPClient

    /// Time limit of one request, answer included: the support API answers from indexes, so
    /// a request that takes longer is stuck, and a script should hear about it.
    static let requestTimeout: TimeAmount = .seconds(30)
    /// Answers are pages of at most 100 items; anything much larger is not the support API.
    static let maximumAnswerBytes = 16 << 20

    init(baseURL: String, token: String, http: HTTPClient) {
        self.baseURL = baseURL
        self.token = token
        self.http = http
    }

    /// Runs `body` with an HTTP client made for a command line: a refused connection fails
    /// at once instead of being retried until the deadline, and redirects are not followed,
    /// so the token goes to the --url host and nowhere else.
    static func withHTTPClient<Result>(_ body: (HTTPClient) async throws -> Result) async throws -> Result {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        configuration.timeout.connect = .seconds(10)
        return try await HTTPClient.withHTTPClient(configuration: configuration, body)
    }

    func get(_ path: [String], query: [(String, String)] = []) async throws(ClientError) -> APIAnswer {
        try await send(.GET, path, query: query, body: nil)
    }

    func delete(_ path: [String]) async throws(ClientError) -> APIAnswer {
        try await send(.DELETE, path, query: [], body: nil)
    }

    func post(_ path: [String], body: some Encodable) async throws(ClientError) -> APIAnswer {
        try await send(.POST, path, query: [], body: try encoded(body))
    }

    func patch(_ path: [String], body: some Encodable) async throws(ClientError) -> APIAnswer {
        try await send(.PATCH, path, query: [], body: try encoded(body))
    }

    private func encoded(_ body: some Encodable) throws(ClientError) -> Data {
        let bytes: Data
        do {
            bytes = try canonicalJSON(body)
        } catch {
            // Not the error itself: an encoding error can quote a value, and a body may hold echo credentials.
            throw ClientError("could not encode the request body as JSON (\(type(of: error)))")
        }
        return bytes
    }

    /// The URL of `path` (segments, percent-encoded here) and `query` on the base URL.
    func url(_ path: [String], query: [(String, String)] = []) -> String {
        var url = baseURL + "/" + path.map(Self.encodePathSegment).joined(separator: "/")
        if !query.isEmpty {
            url += "?" + query.map { Self.encodeQueryPart($0.0) + "=" + Self.encodeQueryPart($0.1) }.joined(separator: "&")
        }
        return url
    }

    private func send(_ method: HTTPMethod, _ path: [String], query: [(String, String)], body: Data?) async throws(ClientError) -> APIAnswer {
        var request = HTTPClientRequest(url: url(path, query: query))
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/json, application/problem+json")
        request.headers.add(name: "User-Agent", value: "echorelay-cli/\(EchoRelayInfo.version)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        return try await execute(request)
    }

    /// Sends a request made here or by the caller (the demo's signed ingest), and turns every
    /// failure and every answer that is not 2xx into a `ClientError`.
    func execute(_ request: HTTPClientRequest) async throws(ClientError) -> APIAnswer {
        let status: HTTPResponseStatus
        let contentType: String?
        let location: String?
        let bytes: Data
        do {
            let response = try await http.execute(request, timeout: Self.requestTimeout)
            status = response.status
            contentType = response.headers.first(name: "Content-Type")
            location = response.headers.first(name: "Location")
            bytes = Data(try await response.body.collect(upTo: Self.maximumAnswerBytes).readableBytesView)
        } catch {
            throw ClientError(
                "cannot reach \(baseURL): \(Self.describeTransportError(error))",
                hint: "check that the server is running and that ECHORELAY_URL / --url points at it"
            )
        }
        let answer = APIAnswer(status: Int(status.code), body: bytes)
        if (300..<400).contains(answer.status) {
            throw ClientError(
                "the server answered \(answer.status) \(status.reasonPhrase), a redirect\(location.map { " to \($0)" } ?? "")",
                hint: "point ECHORELAY_URL / --url at the address it redirects to"
            )
        }
        guard (200..<300).contains(answer.status) else {
            throw ClientError.problem(answer, reasonPhrase: status.reasonPhrase, contentType: contentType, baseURL: baseURL)
        }
        return answer
    }

    /// A short, secret-free description of why a request did not get an answer.
    static func describeTransportError(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("Connection refused") || text.contains("errno: 111") { return "connection refused" }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return "timed out connecting"
            case .deadlineExceeded, .readTimeout: return "no answer within \(requestTimeout.nanoseconds / 1_000_000_000) s"
            case .remoteConnectionClosed: return "the server closed the connection"
            default: break
            }
        }
        return text
    }

    /// RFC 3986 `pchar`s stay as they are (event ids are made of them); anything else, such
    /// as `/` or `?` in a user id, is percent-encoded so it stays inside its segment.
    static func encodePathSegment(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: pathSegmentAllowed) ?? segment
    }

    /// Only unreserved characters stay: `+` must not reach the server unencoded, where it
    /// could be read as a space (a time offset such as `+01:00`, say).
    static func encodeQueryPart(_ part: String) -> String {
        part.addingPercentEncoding(withAllowedCharacters: unreserved) ?? part
    }

    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    static let pathSegmentAllowed = unreserved.union(CharacterSet(charactersIn: "!$&'()*+,;=:@"))
}

/// A successful answer: its status and the body exactly as the server sent it.
struct APIAnswer: Sendable {
    let status: Int
    let body: Data

    func decode<Value: Decodable>(_ type: Value.Type) throws(ClientError) -> Value {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw ClientError(
                "the server's answer could not be read: \(error)",
                hint: "this echorelay may be older or newer than the server; --json prints the answer as it came"
            )
        }
    }
}

/// A failure of a client verb, printed as `error: <message>`, then any field errors, then
/// `hint: <hint>`, with exit status 1.
struct ClientError: Error, CustomStringConvertible {
    var message: String
    var hint: String?
    /// The `errors` of a problem answer: each field the server refused, and why.
    var fieldErrors: [(field: String, reason: String)] = []
    /// The HTTP status of the answer this error reports; nil when there was no answer.
    var status: Int?

    init(_ message: String, hint: String? = nil, fieldErrors: [(field: String, reason: String)] = []) {
        self.message = message
        self.hint = hint
        self.fieldErrors = fieldErrors
    }

    var description: String {
        var lines = ["error: \(message)"]
        lines += fieldErrors.map { "  \($0.field): \($0.reason)" }
        if let hint { lines.append("hint: \(hint)") }
        return lines.joined(separator: "\n")
    }

    /// The error for a non-2xx answer: the server's own detail, with a hint for what to do.
    static func problem(_ answer: APIAnswer, reasonPhrase: String, contentType: String?, baseURL: String) -> ClientError {
        let isProblem = contentType?.lowercased().contains("json") == true
        guard isProblem, let problem = try? JSONDecoder().decode(API.Problem.self, from: answer.body) else {
            // Not a problem+json answer: probably not EchoRelay, or a proxy in front of it.
            var error = ClientError(
                "the server answered \(answer.status) \(reasonPhrase)",
                hint: answer.status == 404 || answer.status == 405
                    ? "is \(baseURL) an EchoRelay server, as new as this echorelay?" : nil
            )
            error.status = answer.status
            return error
        }
        let message = CLIWords.translate(problem.detail ?? problem.title)
        // EchoRelay's detail already names every field it refused; list them only without one.
        let fields = problem.detail != nil ? [] : (problem.errors ?? []).map { (field: CLIWords.flag(for: $0.field), reason: $0.reason) }
        let hint = switch answer.status {
        // A 404 without a detail is a route the server does not have, not a missing item.
        case 404 where problem.detail == nil, 405: "is \(baseURL) an EchoRelay server, as new as this echorelay?"
        case 404: "check the id: the list verbs (events list, subscriptions list, replays list, tokens list) show those there are"
        case 401: "the token was refused: check ECHORELAY_TOKEN / --token"
        case 403: "the token's role may not do this: the support verbs need support or admin, `subscriptions` app or admin (echorelay tokens create --role …)"
        case 409: "it changed meanwhile or its state does not allow this: show it again, then retry"
        case 429, 503: "the server is busy or its database is unavailable; try again shortly"
        case 500...: "the request failed on the server; its logs say why"
        default: "fix what is named above; --help says what each flag takes"
        }
        var error = ClientError(message, hint: hint, fieldErrors: fields)
        error.status = answer.status
        return error
    }
}
