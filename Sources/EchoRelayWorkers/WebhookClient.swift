import AsyncHTTPClient
import EchoRelayCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Sends signed webhooks to subscribers: connect timeout 5 s, the whole exchange within the
/// delivery timeout, no redirects followed, and the first 1 KiB of the answer kept.
final class WebhookClient: Sendable {
    static let responseHeadSize = 1024

    struct Answer: Sendable {
        var statusCode: Int?
        var retryAfter: String?
        var responseHead: String?
        var errorKind: DeliveryErrorKind?
        var error: String?
    }

    private let http: HTTPClient
    private let timeout: Duration

    init(timeout: Duration) {
        let configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5), read: .init(timeout))
        )
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.timeout = timeout
    }

    func post(url: String, headers: [(String, String)], body: [UInt8]) async -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            return try await withTimeout(timeout) { [http, request, timeout] in
                let response = try await http.execute(request, deadline: .now() + .init(timeout))
                var head: [UInt8] = []
                // Keep the first bytes; read (and drop) the rest so the connection can be reused.
                for try await chunk in response.body where head.count < Self.responseHeadSize {
                    head += chunk.readableBytesView.prefix(Self.responseHeadSize - head.count)
                }
                let status = Int(response.status.code)
                return Answer(
                    statusCode: status, retryAfter: response.headers.first(name: "Retry-After"),
                    responseHead: String(decoding: head, as: UTF8.self),
                    errorKind: (200..<300).contains(status) ? nil : .status,
                    error: (200..<300).contains(status) ? nil : "answered \(status)"
                )
            }
        } catch {
            return Answer(errorKind: Self.kind(of: error), error: Self.describe(error))
        }
    }

    static func kind(of error: any Error) -> DeliveryErrorKind {
        if error is TimeoutError { return .timeout }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .readTimeout, .deadlineExceeded, .writeTimeout: return .timeout
            case .remoteConnectionClosed: return .connect
            default: break
            }
        }
        if error is NIOConnectionError { return .connect }
        let text = String(describing: error)
        if text.contains("SSL") || text.contains("TLS") || text.contains("certificate") { return .tls }
        if text.contains("connectionRefused") || text.contains("Connection refused") { return .connect }
        if text.contains("DNS") || text.contains("resolve") { return .dns }
        return .other
    }

    static func describe(_ error: any Error) -> String {
        if error is TimeoutError { return "no answer within the delivery timeout" }
        if let error = error as? HTTPClientError { return "\(error)" }
        if let error = error as? NIOConnectionError {
            return error.dnsAAAAError != nil || error.dnsAError != nil ? "the host does not resolve" : "could not connect"
        }
        return String(describing: type(of: error))
    }

    func shutdown() async {
        try? await http.shutdown()
    }
}
