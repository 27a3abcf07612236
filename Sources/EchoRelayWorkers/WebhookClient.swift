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
        do {
            var fields = HTTPHeaders()
            for (name, value) in headers { fields.add(name: name, value: value) }
            let request = try HTTPClient.Request(url: url, method: .POST, headers: fields, body: .bytes(body))
            let response = try await BoundedExchange(http: http).send(request, keep: Self.responseHeadSize, timeout: timeout)
            let status = response.status
            return Answer(
                statusCode: status, retryAfter: response.headers.first(name: "Retry-After"),
                responseHead: String(decoding: response.body, as: UTF8.self),
                errorKind: (200..<300).contains(status) ? nil : .status,
                error: (200..<300).contains(status) ? nil : "answered \(status)"
            )
        } catch {
            return Answer(errorKind: Self.kind(of: error), error: Self.describe(error))
        }
    }

    static func kind(of error: any Error) -> DeliveryErrorKind {
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
        if let error = error as? HTTPClientError {
            return error == .deadlineExceeded || error == .readTimeout ? "no answer within the delivery timeout" : "\(error)"
        }
        if let error = error as? NIOConnectionError {
            return error.dnsAAAAError != nil || error.dnsAError != nil ? "the host does not resolve" : "could not connect"
        }
        return String(describing: type(of: error))
    }

    func shutdown() async {
        try? await http.shutdown()
    }
}
