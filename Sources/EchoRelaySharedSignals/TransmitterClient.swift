import AsyncHTTPClient
import EchoRelayCore
import Foundation
import NIOCore
import NIOHTTP1

/// The transmitter's side of SSF 1.0 that a receiver calls: its metadata, found from the
/// issuer alone (`/.well-known/ssf-configuration`, §7.2), and its stream management endpoints
/// (configuration, status, verification, §8.1), reached with the transmitter token as a
/// bearer credential. Errors name the endpoint and the answer, never the token.
public actor TransmitterClient {
    public let issuer: String
    private let token: Secret?
    private let allowHTTP: Bool
    private let client: HTTPClient
    private var metadata: TransmitterMetadata?

    public init(issuer: String, token: Secret?, allowHTTP: Bool, client: HTTPClient = JWKSFetch.client) {
        self.issuer = issuer
        self.token = token
        self.allowHTTP = allowHTTP
        self.client = client
    }

    /// Where the metadata is: the well-known path inserted between the issuer's host and its
    /// path (SSF 1.0 §7.2.1), so `https://idp/tenant` is `https://idp/.well-known/ssf-configuration/tenant`.
    public static func wellKnownURL(issuer: String) -> String? {
        guard var components = URLComponents(string: issuer), components.host != nil else { return nil }
        let path = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = "/.well-known/ssf-configuration" + path
        components.query = nil
        components.fragment = nil
        return components.string
    }

    /// The transmitter's metadata, read once and kept.
    public func discover() async throws(TransmitterError) -> TransmitterMetadata {
        if let metadata { return metadata }
        guard let url = Self.wellKnownURL(issuer: issuer) else {
            throw .configuration("ECHORELAY_SET_ISSUER is not an absolute URL, so the transmitter's metadata cannot be found")
        }
        let document = try await exchange(.GET, url, body: nil, authorized: false, what: "the transmitter's metadata")
        guard case .object(let fields)? = document else { throw .answer("the transmitter's metadata (\(url)) is not a JSON object") }
        let found = TransmitterMetadata(fields)
        // SSF 1.0 §7.2.3: the issuer in the metadata must be the one it was found from.
        guard found.issuer == issuer else {
            throw .answer("the transmitter's metadata names the issuer \(found.issuer ?? "none"), not ECHORELAY_SET_ISSUER")
        }
        if let jwks = found.jwksURI, let problem = JWKSFetch.problem(url: jwks, allowHTTP: allowHTTP) {
            throw .answer("the transmitter's jwks_uri \(problem)")
        }
        metadata = found
        return found
    }

    /// `POST` to the configuration endpoint: a new stream for `delivery`, asking for `eventsRequested`.
    public func createStream(delivery: SecurityEventStream.Delivery, endpointURL: String?, authorization: Secret?,
                             eventsRequested: [String], description: String) async throws(TransmitterError) -> JSONValue {
        var deliveryFields: [String: JSONValue] = ["method": .string(delivery.method)]
        if let endpointURL { deliveryFields["endpoint_url"] = .string(endpointURL) }
        if let authorization { deliveryFields["authorization_header"] = .string("Bearer " + authorization.revealed) }
        let offered = try await discover().deliveryMethodsSupported
        guard offered.isEmpty || offered.contains(delivery.method) else {
            throw .unsupported("the transmitter does not offer \(delivery.rawValue) delivery (\(delivery.method)); it offers \(offered.joined(separator: ", "))")
        }
        let body: JSONValue = .object([
            "delivery": .object(deliveryFields), "events_requested": .array(eventsRequested.map(JSONValue.string)),
            "description": .string(description),
        ])
        return try await stream(.POST, try await endpoint(\.configurationEndpoint, "configuration_endpoint"), body: body)
    }

    /// `PATCH` the stream's configuration with `changes` (receiver-supplied members only).
    public func updateStream(id: String, changes: [String: JSONValue]) async throws(TransmitterError) -> JSONValue {
        var body = changes
        body["stream_id"] = .string(id)
        return try await stream(.PATCH, try await endpoint(\.configurationEndpoint, "configuration_endpoint"), body: .object(body))
    }

    /// `GET` the stream's status.
    public func status(id: String) async throws(TransmitterError) -> JSONValue {
        try await stream(.GET, try await endpoint(\.statusEndpoint, "status_endpoint"), query: id, body: nil)
    }

    /// `POST` a new status (`enabled`, `paused`, `disabled`), with why.
    public func setStatus(id: String, status: SecurityEventStream.Status, reason: String?) async throws(TransmitterError) -> JSONValue {
        var body: [String: JSONValue] = ["stream_id": .string(id), "status": .string(status.rawValue)]
        if let reason { body["reason"] = .string(reason) }
        return try await stream(.POST, try await endpoint(\.statusEndpoint, "status_endpoint"), body: .object(body))
    }

    /// `POST` to the verification endpoint: the transmitter sends a verification event with `state`.
    public func requestVerification(id: String, state: String) async throws(TransmitterError) {
        let body: JSONValue = .object(["stream_id": .string(id), "state": .string(state)])
        _ = try await exchange(.POST, try await endpoint(\.verificationEndpoint, "verification_endpoint"), body: body,
                               authorized: true, what: "the verification endpoint")
    }

    private func endpoint(_ field: KeyPath<TransmitterMetadata, String?>, _ name: String) async throws(TransmitterError) -> String {
        guard let url = try await discover()[keyPath: field] else {
            throw .unsupported("the transmitter's metadata has no \(name): it does not offer this operation")
        }
        guard JWKSFetch.problem(url: url, allowHTTP: allowHTTP) == nil else {
            throw .answer("the transmitter's \(name) is not an https URL")
        }
        return url
    }

    private func stream(_ method: HTTPMethod, _ url: String, query id: String? = nil, body: JSONValue?) async throws(TransmitterError) -> JSONValue {
        var target = url
        if let id, var components = URLComponents(string: url) {
            components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "stream_id", value: id)]
            target = components.string ?? url
        }
        guard let answer = try await exchange(method, target, body: body, authorized: true, what: "the stream endpoint") else {
            throw .answer("the transmitter answered \(method.rawValue) \(url) with no body")
        }
        return answer
    }

    /// One request: JSON in, JSON (or nothing) out, `2xx` only, within 15 s, at most 256 KiB.
    private func exchange(_ method: HTTPMethod, _ url: String, body: JSONValue?, authorized: Bool,
                          what: String) async throws(TransmitterError) -> JSONValue? {
        if authorized, token == nil {
            throw .configuration("ECHORELAY_SET_TRANSMITTER_TOKEN is not set: the transmitter's stream endpoints need it")
        }
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        if authorized, let token { request.headers.add(name: "Authorization", value: "Bearer " + token.revealed) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(body.canonicalEncoding())
        }
        let status: HTTPResponseStatus
        let bytes: [UInt8]
        do {
            let response = try await client.execute(request, timeout: .seconds(15))
            status = response.status
            bytes = Array(try await response.body.collect(upTo: 256 * 1024).readableBytesView)
        } catch {
            throw .unreachable("\(what) (\(method.rawValue) \(url)) could not be reached: \(error)")
        }
        guard (200 ..< 300).contains(Int(status.code)) else {
            let detail = (try? JSONValue.parse(bytes)).flatMap { $0.objectValue?["description"]?.stringValue ?? $0.objectValue?["error"]?.stringValue }
            if status == .unauthorized || status == .forbidden {
                throw .refused("\(what) answered \(status.code): the transmitter does not accept ECHORELAY_SET_TRANSMITTER_TOKEN")
            }
            if status == .notFound, authorized {
                throw .notFound("\(what) (\(method.rawValue) \(url)) answered 404: the transmitter does not know this stream")
            }
            if (400 ..< 500).contains(Int(status.code)), authorized {
                throw .rejected("the transmitter refused the request: \(what) answered \(status.code)" + (detail.map { ": " + $0 } ?? ""))
            }
            throw .answer("\(what) (\(method.rawValue) \(url)) answered \(status.code)" + (detail.map { ": " + $0 } ?? ""))
        }
        guard !bytes.isEmpty else { return nil }
        guard let document = try? JSONValue.parse(bytes) else { throw .answer("\(what) (\(url)) answered with something other than JSON") }
        return document
    }
}

/// What a transmitter publishes of itself (SSF 1.0 §7.1).
public struct TransmitterMetadata: Sendable, Equatable {
    public var issuer: String?
    public var jwksURI: String?
    public var deliveryMethodsSupported: [String]
    public var configurationEndpoint: String?
    public var statusEndpoint: String?
    public var verificationEndpoint: String?

    init(_ fields: [String: JSONValue]) {
        issuer = fields["issuer"]?.stringValue
        jwksURI = fields["jwks_uri"]?.stringValue
        deliveryMethodsSupported = fields["delivery_methods_supported"]?.arrayValue?.compactMap(\.stringValue) ?? []
        configurationEndpoint = fields["configuration_endpoint"]?.stringValue
        statusEndpoint = fields["status_endpoint"]?.stringValue
        verificationEndpoint = fields["verification_endpoint"]?.stringValue
    }
}

/// Why a call to the transmitter failed, in words for an operator.
public enum TransmitterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// EchoRelay's own settings do not allow the call.
    case configuration(String)
    /// The transmitter does not offer the operation.
    case unsupported(String)
    /// The transmitter refused the transmitter token.
    case refused(String)
    /// The transmitter does not know the stream.
    case notFound(String)
    /// The transmitter refused what it was asked (a 4xx other than those).
    case rejected(String)
    case unreachable(String)
    /// The transmitter answered, but not as SSF says.
    case answer(String)

    public var description: String {
        switch self {
        case .configuration(let text), .unsupported(let text), .refused(let text), .notFound(let text), .rejected(let text),
             .unreachable(let text), .answer(let text): text
        }
    }
}
