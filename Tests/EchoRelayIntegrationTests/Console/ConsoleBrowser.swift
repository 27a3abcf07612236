import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import TestSupport

/// A minimal browser for route tests of `/console`: it keeps cookies as a browser does (by
/// name, dropping those set with `Max-Age=0`), does not follow redirects (tests look at each
/// 303), and posts forms URL-encoded.
final class ConsoleBrowser: Sendable {
    let baseURL: String
    private let cookies = Mutex<[String: String]>([:])
    private static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.idleTimeout = .seconds(1)  // before the server's (see HTTPTestClient)
        return HTTPClient(configuration: configuration)
    }()

    init(port: Int) {
        baseURL = "http://127.0.0.1:\(port)"
    }

    var cookieJar: [String: String] { cookies.withLock { $0 } }

    func get(_ path: String, headers: [(String, String)] = []) async throws -> TestHTTPResponse {
        try await send(.GET, path, headers: headers, body: nil)
    }

    func post(_ path: String, _ fields: [(String, String)], headers: [(String, String)] = []) async throws -> TestHTTPResponse {
        try await send(.POST, path, headers: headers + [("Content-Type", "application/x-www-form-urlencoded")], body: Self.encode(fields))
    }

    /// Signs in through the form, as a person would: the form, then its POST.
    @discardableResult
    func signIn(token: String, headers: [(String, String)] = []) async throws -> TestHTTPResponse {
        let form = try await get("/console/sign-in")
        return try await post("/console/sign-in", [("csrf", try Self.hiddenField("csrf", in: form.text)), ("token", token)], headers: headers)
    }

    /// The session's CSRF token, as every page of the session carries it.
    func formToken() async throws -> String {
        try Self.hiddenField("csrf", in: try await get("/console").text)
    }

    static func hiddenField(_ name: String, in html: String) throws -> String {
        guard let range = html.range(of: #"name="\#(name)" value=""#) else { throw TestSetupError("no hidden field \(name) in the page") }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }

    static func encode(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
    }

    private func send(_ method: HTTPMethod, _ path: String, headers: [(String, String)], body: String?) async throws -> TestHTTPResponse {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let jar = cookieJar
        if !jar.isEmpty { request.headers.add(name: "Cookie", value: jar.map { "\($0)=\($1)" }.joined(separator: "; ")) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await Self.client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 4 << 20)
        for header in response.headers["Set-Cookie"] {
            let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { continue }
            let name = String(pair[0]).trimmingCharacters(in: .whitespaces)
            cookies.withLock { $0[name] = header.contains("Max-Age=0") ? nil : String(pair[1]) }
        }
        return TestHTTPResponse(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }
}
