import AsyncHTTPClient
import EchoRelayCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// Sends signed webhooks to subscribers: a connection within the connect timeout (refused at
/// once when nothing listens, never retried), the whole exchange within the delivery timeout,
/// no redirects followed, and the first 1 KiB of the answer kept.
///
/// A webhook to a checked address connects to exactly that address (DNS rebinding: a name
/// that answered a public address to the check must not answer a private one to the
/// connection), while the `Host` header and the TLS server name keep the name. AsyncHTTPClient
/// pins a name to an address only per client (`dnsOverride`), so each host whose address was
/// checked gets its own client, kept while the check keeps giving that address.
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
    private let connectTimeout: Duration
    /// nil: the system's trust roots (tests pass their own CA).
    private let tls: TLSConfiguration?
    private let connectionsPerHost: Int
    /// Clients pinned to a checked address, by host name.
    private let pinned = Mutex<[String: (address: IPAddress, client: HTTPClient)]>([:])
    /// More hosts than this and another host's client is closed (its next webhook makes a new one).
    static let pinnedHosts = 256

    /// - connectionsPerHost: webhooks in flight at once to one host and port, each on its own
    ///   connection (HTTP/1.1). The worker's caps are what bound them, so this is the worker's
    ///   concurrency: AsyncHTTPClient's default of 8 queued the webhooks of every subscription
    ///   on one host behind 8 connections, whatever their caps allowed.
    init(timeout: Duration, connectTimeout: Duration, tls: TLSConfiguration? = nil, connectionsPerHost: Int = 8) {
        self.http = HTTPClient(eventLoopGroupProvider: .singleton,
                               configuration: Self.configuration(timeout: timeout, connectTimeout: connectTimeout, tls: tls,
                                                                 connectionsPerHost: connectionsPerHost))
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.tls = tls
        self.connectionsPerHost = connectionsPerHost
    }

    /// A client that also trusts the certificate authorities in `caFile`
    /// (`ECHORELAY_SUBSCRIBER_CA_FILE`) beside the system's.
    convenience init(timeout: Duration, connectTimeout: Duration, caFile: String?, connectionsPerHost: Int = 8) {
        var tls: TLSConfiguration?
        if let caFile {
            tls = .makeClientConfiguration()
            tls?.additionalTrustRoots = [.file(caFile)]
        }
        self.init(timeout: timeout, connectTimeout: connectTimeout, tls: tls, connectionsPerHost: connectionsPerHost)
    }

    private static func configuration(timeout: Duration, connectTimeout: Duration, tls: TLSConfiguration?, connectionsPerHost: Int,
                                      host: String? = nil, address: IPAddress? = nil) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: .init(connectTimeout), read: .init(timeout))
        )
        // Retrying a refused connection until the connect timeout would turn "nothing
        // listens" into a timeout, seconds later: the retry schedule tries again instead.
        configuration.connectionPool.retryConnectionEstablishment = false
        // Common servers close an idle keep-alive connection after 5 s (node, Apache): letting
        // ours go first keeps a webhook from being sent on a connection the subscriber is closing,
        // which would fail as an attempt the subscriber never saw.
        configuration.connectionPool.idleTimeout = .seconds(4)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        if let host, let address { configuration.dnsOverride = [host: address.description] }
        return configuration
    }

    /// The client that connects `host` to `address`, made when the check first gives that
    /// address (the one it replaces is closed once its webhooks are done).
    private func client(host: String, address: IPAddress) -> HTTPClient {
        let (client, retired) = pinned.withLock { pinned -> (HTTPClient, HTTPClient?) in
            if let known = pinned[host], known.address == address { return (known.client, nil) }
            let client = HTTPClient(eventLoopGroupProvider: .singleton,
                                    configuration: Self.configuration(timeout: timeout, connectTimeout: connectTimeout, tls: tls,
                                                                      connectionsPerHost: connectionsPerHost, host: host, address: address))
            var retired = pinned.updateValue((address, client), forKey: host)?.client
            if retired == nil, pinned.count > Self.pinnedHosts, let other = pinned.keys.first(where: { $0 != host }) {
                retired = pinned.removeValue(forKey: other)?.client
            }
            return (client, retired)
        }
        if let retired {
            // Webhooks still in flight on it finish first: none outlives the delivery timeout.
            let grace = timeout + .seconds(1)
            Task.detached { try? await Task.sleep(for: grace); try? await retired.shutdown() }
        }
        return client
    }

    /// Posts `body` to `url`; with `address`, connects to that address whatever the name
    /// resolves to now.
    func post(url: String, connectingTo address: IPAddress? = nil, headers: [(String, String)], body: [UInt8]) async -> Answer {
        do {
            var fields = HTTPHeaders()
            for (name, value) in headers { fields.add(name: name, value: value) }
            let request = try HTTPClient.Request(url: url, method: .POST, headers: fields, body: .bytes(body))
            let http = if let address, let host = request.url.host, IPAddress.parse(host) == nil {
                client(host: host, address: address)
            } else {
                self.http
            }
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

    /// A webhook's headers: its type, EchoRelay's name, and the Standard Webhooks id, a fresh
    /// timestamp and one signature per secret.
    static func signedHeaders(webhookID: String, body: [UInt8], secrets: [WebhookSecret]) -> [(String, String)] {
        let timestamp = Int64(Date().timeIntervalSince1970)
        return [
            ("Content-Type", "application/json"),
            ("User-Agent", "EchoRelay/\(EchoRelayInfo.version)"),
            (StandardWebhooks.idHeader, webhookID),
            (StandardWebhooks.timestampHeader, String(timestamp)),
            (StandardWebhooks.signatureHeader,
             StandardWebhooks.signatureHeaderValue(id: webhookID, timestamp: timestamp, body: body, secrets: secrets)),
        ]
    }

    /// What went wrong, in the kinds an operator acts on: nothing listening, no connection in
    /// time, no answer in time, a connection cut, a name, a certificate.
    static func kind(of error: any Error) -> DeliveryErrorKind {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return .connectTimeout
            case .readTimeout, .deadlineExceeded, .writeTimeout: return .timeout
            case .remoteConnectionClosed: return .reset
            default: break
            }
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return .connectionRefused
            case ECONNRESET, EPIPE: return .reset
            case ETIMEDOUT: return .connectTimeout
            default: return .connect
            }
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty { return .dns }
            // Each address tried: refused everywhere is refused; otherwise the first cause.
            let kinds = error.connectionErrors.map { kind(of: $0.error) }
            if !kinds.isEmpty, kinds.allSatisfy({ $0 == .connectionRefused }) { return .connectionRefused }
            return kinds.first ?? .connect
        case ChannelError.connectTimeout:
            return .connectTimeout
        case is NIOSSLError, is BoringSSLError:
            return .tls
        default:
            break
        }
        let text = String(describing: error)
        if text.contains("SSL") || text.contains("TLS") || text.contains("certificate") { return .tls }
        if text.contains("DNS") || text.contains("resolve") { return .dns }
        return .other
    }

    /// A short description of the failure; never the subscriber's URL or a secret.
    static func describe(_ error: any Error) -> String {
        switch kind(of: error) {
        case .connectionRefused: "connection refused: nothing listens at the subscriber's address and port"
        case .connectTimeout: "no connection within the connect timeout (ECHORELAY_DELIVERY_CONNECT_TIMEOUT)"
        case .timeout: "no answer within the delivery timeout (ECHORELAY_DELIVERY_TIMEOUT)"
        case .reset: "the subscriber closed the connection before answering"
        case .dns: "the host does not resolve"
        case .tls: "TLS failed: \(String(describing: type(of: error)))"
        case .connect: "could not connect: \((error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(type(of: error))")"
        default: String(describing: type(of: error))
        }
    }

    func shutdown() async {
        try? await http.shutdown()
        let clients = pinned.withLock { pinned in
            defer { pinned.removeAll() }
            return pinned.values.map(\.client)
        }
        for client in clients { try? await client.shutdown() }
    }
}

/// `ECHORELAY_SUBSCRIBER_CA_FILE`, checked at start so that a bad file stops `serve` instead of
/// failing every webhook's TLS handshake later.
public enum SubscriberCAFile {
    /// Why the file cannot be used, or nil. Never repeats the file's contents.
    public static func problem(_ path: String) -> String? {
        guard FileManager.default.isReadableFile(atPath: path) else { return "cannot read \"\(path)\"" }
        do {
            return try NIOSSLCertificate.fromPEMFile(path).isEmpty ? "\"\(path)\" holds no PEM certificate" : nil
        } catch {
            return "\"\(path)\" is not a PEM file of certificates"
        }
    }
}
