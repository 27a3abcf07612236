import AsyncHTTPClient
import EchoRelayCore
import Foundation
import NIOCore
import NIOHTTP1

/// A plain HTTP answer, read whole.
public struct TestHTTPResponse: Sendable {
    public let status: Int
    public let headers: HTTPHeaders
    public let body: Data

    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    public init(status: Int, headers: HTTPHeaders, body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Talks to a live server on loopback over real TCP with async-http-client.
public struct HTTPTestClient: Sendable {
    /// One client for every test. Its idle connections close after a second, sooner than any
    /// server under test does (node's http 5 s, ours 2 s at the least): a pooled connection the
    /// server has just closed would otherwise fail the next request with `remoteConnectionClosed`.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.idleTimeout = .seconds(1)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    public let baseURL: String
    public let port: Int

    public init(port: Int) {
        self.port = port
        self.baseURL = "http://127.0.0.1:\(port)"
    }

    public func send(
        _ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) async throws -> TestHTTPResponse {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await Self.client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return TestHTTPResponse(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }

    public func get(_ path: String, bearer: String? = nil) async throws -> TestHTTPResponse {
        try await send(.GET, path, headers: bearer.map { [("Authorization", "Bearer \($0)")] } ?? [])
    }
}

/// Builds signed `POST /v1/events` requests the way an identity provider does.
public struct EventSigner: Sendable {
    public let secret: String

    public init(secret: String) {
        self.secret = secret
    }

    public func headers(
        for body: [UInt8], id: String = "msg_" + UUID().uuidString, timestamp: Date = Date(),
        contentType: String = "application/json"
    ) throws -> [(String, String)] {
        let seconds = Int64(timestamp.timeIntervalSince1970)
        let signature = StandardWebhooks.signature(id: id, timestamp: seconds, body: body, secret: try WebhookSecret(secret))
        return [
            ("Content-Type", contentType), ("webhook-id", id), ("webhook-timestamp", String(seconds)),
            ("webhook-signature", signature),
        ]
    }
}

/// An event body as the provider would push it; `changes` edits it before encoding.
public func eventBody(
    id: String = "evt_" + UUID().uuidString, type: String = "token.rotated", userID: String = "1001",
    phone: String? = nil, changes: (inout [String: Any]) -> Void = { _ in }
) -> [UInt8] {
    var object: [String: Any] = [
        "id": id, "type": type, "user_id": userID, "occurred_at": "2026-11-23T10:15:30Z",
        "data": phone.map { ["phone_number": $0] } ?? [:],
        "echo": [
            "service_provider": "https://api.digits.com/1.1/sdk/account.json",
            "authorization": #"OAuth oauth_consumer_key="key", oauth_nonce="n", oauth_signature="sig%3D", oauth_signature_method="HMAC-SHA1", oauth_timestamp="1795428930", oauth_token="tok", oauth_version="1.0""#,
        ],
    ]
    changes(&object)
    return Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
}
