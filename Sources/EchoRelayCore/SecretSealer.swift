import Crypto
import Foundation

/// Encrypts subscription signing secrets at rest (AES-256-GCM) with the keys of
/// `ECHORELAY_SECRET_KEY`: the first key seals, every key opens, so a new key can be put
/// first while values sealed with the old one are still read (then `echorelay reseal`).
///
/// A sealed value is `v1:<key id>:<base64 of nonce, ciphertext and tag>`. The key id is the
/// first 8 hex digits of the key's SHA-256: it names the key without revealing it. The
/// subscription id is the authenticated data, so a sealed value opens only on its own row.
/// Any other stored text (a `whsec_…` written before encryption, or with no key) is read as is.
public struct SecretSealer: Sendable {
    struct Key: Sendable {
        let id: String
        let key: SymmetricKey
    }

    let keys: [Key]

    /// Opened signing secrets by row and sealed value. Claims open the same few secrets over
    /// and over; a rotation (or a reseal) stores a new sealed value, with a fresh nonce, so an
    /// entry is never stale. The row is part of the key because a sealed value opens only on
    /// its own row. Held in memory only, as the secrets of the deliveries in flight are.
    let opened = BoundedCache<SealedValue, Secret>(capacity: 1024)

    struct SealedValue: Hashable, Sendable {
        let subscriptionID: String
        let stored: String
    }

    /// The key that seals, by its id (safe to log).
    public var sealingKeyID: String { keys[0].id }
    /// Every key's id, the sealing one first.
    public var keyIDs: [String] { keys.map(\.id) }

    static let prefix = "v1:"

    /// `text` is one key, or comma-separated keys with the sealing key first; each the base64
    /// of 32 random bytes (see `generateKey()`).
    public init(keys text: String) throws(SecretSealerError) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard !(parts.count == 1 && parts[0].isEmpty) else { throw .malformedKey(position: 1, count: 1) }
        var keys: [Key] = []
        for (index, part) in parts.enumerated() {
            guard let data = Data(base64Encoded: part), data.count == 32 else {
                throw .malformedKey(position: index + 1, count: parts.count)
            }
            let key = SymmetricKey(data: data)
            let id = Self.keyID(of: data)
            guard !keys.contains(where: { $0.id == id }) else { throw .duplicateKey(id: id) }
            keys.append(Key(id: id, key: key))
        }
        self.keys = keys
    }

    /// A new random key, as `ECHORELAY_SECRET_KEY` takes it.
    public static func generateKey() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }

    static func keyID(of key: Data) -> String {
        SHA256.hash(data: key).prefix(4).lowercaseHex
    }

    /// True when `stored` is a sealed value rather than plain text.
    public static func isSealed(_ stored: String) -> Bool {
        stored.hasPrefix(prefix)
    }

    /// The id of the key `stored` was sealed with, or nil for plain text.
    public static func keyID(ofSealed stored: String) -> String? {
        guard isSealed(stored) else { return nil }
        let parts = stored.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        return parts.count == 3 ? String(parts[1]) : nil
    }

    /// Seals `secret` with the first key, bound to `subscriptionID`.
    public func seal(_ secret: String, subscriptionID: String) throws(SecretSealerError) -> String {
        let key = keys[0]
        do {
            let box = try AES.GCM.seal(Data(secret.utf8), using: key.key, authenticating: Data(subscriptionID.utf8))
            guard let combined = box.combined else { throw SecretSealerError.cannotSeal }
            return Self.prefix + key.id + ":" + combined.base64EncodedString()
        } catch {
            throw .cannotSeal
        }
    }

    /// The secret in `stored`: plain text as is, a sealed value opened with its key.
    public func open(_ stored: String, subscriptionID: String) throws(SecretSealerError) -> String {
        try Self.open(stored, subscriptionID: subscriptionID, with: self)
    }

    /// `secret` as a store keeps it: sealed when there is a sealer, as it is otherwise.
    public static func stored(_ secret: String, subscriptionID: String, with sealer: SecretSealer?) throws(SecretSealerError) -> String {
        try sealer?.seal(secret, subscriptionID: subscriptionID) ?? secret
    }

    /// A delivery's signing secrets as a store keeps them, opened: the current one, then the
    /// previous. Sealed values are opened once each (see `opened`); failures are not kept.
    public static func signingSecrets(
        _ current: String, _ previous: String?, subscriptionID: String, with sealer: SecretSealer?
    ) throws(SecretSealerError) -> [Secret] {
        try ([current] + (previous.map { [$0] } ?? [])).map { stored throws(SecretSealerError) in
            guard let sealer, isSealed(stored) else { return Secret(try open(stored, subscriptionID: subscriptionID, with: sealer)) }
            return try sealer.opened.value(for: SealedValue(subscriptionID: subscriptionID, stored: stored)) { () throws(SecretSealerError) in
                Secret(try sealer.open(stored, subscriptionID: subscriptionID))
            }
        }
    }

    /// The secret in `stored` when `sealer` may be absent (no key configured): plain text is
    /// read as is, and a sealed value then fails with `.noKey`.
    public static func open(_ stored: String, subscriptionID: String, with sealer: SecretSealer?) throws(SecretSealerError) -> String {
        guard isSealed(stored) else { return stored }
        let parts = stored.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let combined = Data(base64Encoded: String(parts[2])) else {
            throw .malformedSealedValue(subscriptionID: subscriptionID)
        }
        let id = String(parts[1])
        guard let sealer else { throw .noKey(id: id, subscriptionID: subscriptionID) }
        guard let key = sealer.keys.first(where: { $0.id == id }) else {
            throw .unknownKey(id: id, subscriptionID: subscriptionID)
        }
        do {
            let box = try AES.GCM.SealedBox(combined: combined)
            let plain = try AES.GCM.open(box, using: key.key, authenticating: Data(subscriptionID.utf8))
            guard let text = String(data: plain, encoding: .utf8) else { throw SecretSealerError.cannotSeal }
            return text
        } catch {
            throw .cannotOpen(id: id, subscriptionID: subscriptionID)
        }
    }

    /// `stored` sealed with the first key: plain text sealed, a value sealed with another key
    /// opened and sealed again; nil when it is sealed with the first key already.
    public func reseal(_ stored: String, subscriptionID: String) throws(SecretSealerError) -> String? {
        if Self.keyID(ofSealed: stored) == sealingKeyID {
            _ = try open(stored, subscriptionID: subscriptionID)  // it must still open
            return nil
        }
        return try seal(open(stored, subscriptionID: subscriptionID), subscriptionID: subscriptionID)
    }

    /// What `reseal(row:)` reads of `subscriptions`.
    public static let resealColumns = "id, secret, previous_secret"

    /// A subscription's secrets resealed (see `reseal(_:subscriptionID:)`), each nil where it
    /// stays as it is; nil when neither changes.
    public func reseal(row: some StoreRow) throws -> (id: String, secret: String?, previous: String?)? {
        let id = try row.string(0)
        let secret = try reseal(try row.string(1), subscriptionID: id)
        let previous = try row.optionalString(2).flatMap { stored throws(SecretSealerError) in
            try reseal(stored, subscriptionID: id)
        }
        return secret == nil && previous == nil ? nil : (id, secret, previous)
    }
}

/// Why a key or a sealed secret was refused. The texts name keys by their id and rows by
/// their subscription id, never by key or secret material.
public enum SecretSealerError: Error, Equatable, CustomStringConvertible {
    case malformedKey(position: Int, count: Int)
    case duplicateKey(id: String)
    case noKey(id: String, subscriptionID: String)
    case unknownKey(id: String, subscriptionID: String)
    case cannotOpen(id: String, subscriptionID: String)
    case malformedSealedValue(subscriptionID: String)
    case cannotSeal
    case notConfigured

    public var description: String {
        switch self {
        case .malformedKey(let position, let count):
            let which = count == 1 ? "the key" : "key \(position) of \(count)"
            return "ECHORELAY_SECRET_KEY: \(which) is not the base64 of 32 bytes (make one with: echorelay secret-key)"
        case .duplicateKey(let id):
            return "ECHORELAY_SECRET_KEY: key \(id) is listed twice"
        case .noKey(let id, let subscriptionID):
            return "the secret of subscription \(subscriptionID) is sealed with key \(id), but ECHORELAY_SECRET_KEY is not set"
        case .unknownKey(let id, let subscriptionID):
            return "the secret of subscription \(subscriptionID) is sealed with key \(id), which ECHORELAY_SECRET_KEY does not hold"
        case .cannotOpen(let id, let subscriptionID):
            return "the secret of subscription \(subscriptionID) does not open with key \(id): it was altered or belongs to another row"
        case .malformedSealedValue(let subscriptionID):
            return "the secret of subscription \(subscriptionID) starts with v1: but is not a sealed value"
        case .cannotSeal:
            return "a subscription secret could not be sealed"
        case .notConfigured:
            return "ECHORELAY_SECRET_KEY is not set: there is no key to seal subscription secrets with"
        }
    }
}
