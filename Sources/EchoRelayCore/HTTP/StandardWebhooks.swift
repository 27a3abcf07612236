import Crypto
import Foundation

/// A Standard Webhooks signing secret: `whsec_` followed by the base64 of the key bytes.
public struct WebhookSecret: Sendable {
    public static let prefix = "whsec_"
    let key: SymmetricKey
    /// How many bytes the key has: 16 or more hold the 128 bits `serve` asks of an ingest secret.
    public var keyByteCount: Int { key.bitCount / 8 }

    /// Parses `whsec_<base64>`. The error never repeats the secret.
    public init(_ text: String) throws(WebhookSecretError) {
        guard text.hasPrefix(Self.prefix) else { throw .missingPrefix }
        guard let bytes = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))), !bytes.isEmpty else {
            throw .invalidBase64
        }
        self.key = SymmetricKey(data: bytes)
    }

    /// A new random 24-byte secret, as its `whsec_` text.
    public static func generate() -> String {
        prefix + Data(SymmetricKey(size: .init(bitCount: 192)).withUnsafeBytes { Array($0) }).base64EncodedString()
    }
}

public enum WebhookSecretError: Error, Equatable, CustomStringConvertible {
    case missingPrefix
    case invalidBase64

    public var description: String {
        switch self {
        case .missingPrefix: "a webhook secret must start with \"whsec_\""
        case .invalidBase64: "a webhook secret must be \"whsec_\" followed by non-empty base64"
        }
    }
}

/// Signs and verifies Standard Webhooks messages: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`.
public enum StandardWebhooks {
    public static let idHeader = "webhook-id"
    public static let timestampHeader = "webhook-timestamp"
    public static let signatureHeader = "webhook-signature"
    /// How far `webhook-timestamp` may be from now, either way.
    public static let tolerance: TimeInterval = 5 * 60

    /// The `v1,<base64>` signature of one message under one secret.
    public static func signature(
        id: String, timestamp: Int64, body: some Collection<UInt8>, secret: WebhookSecret
    ) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: signedContent(id: id, timestamp: timestamp, body: body), using: secret.key)
        return "v1," + Data(mac).base64EncodedString()
    }

    /// The `webhook-signature` header value: one `v1,` entry per secret, space-separated.
    public static func signatureHeaderValue(
        id: String, timestamp: Int64, body: some Collection<UInt8>, secrets: [WebhookSecret]
    ) -> String {
        secrets.map { signature(id: id, timestamp: timestamp, body: body, secret: $0) }.joined(separator: " ")
    }

    /// Verifies one message against every active secret.
    ///
    /// Succeeds when any `v1,` entry of the header matches any secret; entries of other
    /// versions are ignored. Comparison is constant-time (swift-crypto's MAC equality).
    public static func verify(
        id: String?, timestamp: String?, signatures: String?, body: UnsafeRawBufferPointer,
        secrets: [WebhookSecret], now: Date
    ) throws(WebhookVerificationError) {
        guard let id, !id.isEmpty else { throw .missingHeader(idHeader) }
        guard let timestamp, !timestamp.isEmpty else { throw .missingHeader(timestampHeader) }
        guard let signatures, !signatures.isEmpty else { throw .missingHeader(signatureHeader) }
        guard timestamp.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let seconds = Int64(timestamp) else { throw .invalidTimestamp }
        guard abs(Double(seconds) - now.timeIntervalSince1970) <= tolerance else { throw .timestampOutOfTolerance }

        let candidates = signatures.utf8.split(separator: UInt8(ascii: " ")).compactMap { entry -> Data? in
            guard entry.starts(with: "v1,".utf8) else { return nil }
            return Data(base64Encoded: Data(entry.dropFirst(3)))
        }
        guard !candidates.isEmpty else { throw .noMatchingSignature }
        for secret in secrets {
            // The MAC over "id.timestamp." and then the body, without joining them in a copy.
            var mac = HMAC<SHA256>(key: secret.key)
            mac.update(data: Array("\(id).\(seconds).".utf8))
            mac.update(data: body)
            let code = mac.finalize()
            if candidates.contains(where: { code == $0 }) { return }
        }
        throw .noMatchingSignature
    }

    /// `verify` for a body in any collection of bytes (tests, the demo subscriber).
    public static func verify(
        id: String?, timestamp: String?, signatures: String?, body: some Collection<UInt8>,
        secrets: [WebhookSecret], now: Date
    ) throws(WebhookVerificationError) {
        let outcome = Array(body).withUnsafeBytes { bytes in
            Result { () throws(WebhookVerificationError) in
                try verify(id: id, timestamp: timestamp, signatures: signatures, body: bytes, secrets: secrets, now: now)
            }
        }
        try outcome.get()
    }

    private static func signedContent(id: String, timestamp: Int64, body: some Collection<UInt8>) -> Data {
        var content = Data("\(id).\(timestamp).".utf8)
        content.append(contentsOf: body)
        return content
    }
}

public enum WebhookVerificationError: Error, Equatable, CustomStringConvertible {
    case missingHeader(String)
    case invalidTimestamp
    case timestampOutOfTolerance
    case noMatchingSignature

    public var description: String {
        switch self {
        case .missingHeader(let name): "the \(name) header is missing"
        case .invalidTimestamp: "the webhook-timestamp header must be unix seconds"
        case .timestampOutOfTolerance: "the webhook-timestamp header is more than 5 minutes from now"
        case .noMatchingSignature: "no signature in the webhook-signature header matches an active secret"
        }
    }
}
