import EchoRelayCore
import Foundation
import JWTKit

/// The transmitter's published signing keys (its JWKS), fetched at first use and again at
/// once when a SET names a key not among them (a key rotation: the transmitter publishes the
/// new key, then signs with it). A key id still unknown after a fetch is not looked for again
/// for `refetchInterval`, and fetches are at least `minimumInterval` apart, so a flood of
/// made-up key ids cannot make us hammer the transmitter; a SET that meets that floor is asked
/// to come again (`retryAfter`) rather than refused, so no SET a fresh fetch would accept is
/// lost. A failed fetch keeps the keys already known. Only public RSA and EC keys are taken:
/// a symmetric key in a JWKS would be public, and no SET may be verified with it.
public actor TransmitterKeys {
    /// Reads the JWKS document.
    public typealias Fetch = @Sendable () async throws -> [UInt8]

    private let fetch: Fetch
    private let refetchInterval: Duration
    private let minimumInterval: Duration
    /// When each unknown key id was last looked for, a bounded number of them.
    private let lookedFor = BoundedCache<String, ContinuousClock.Instant>(capacity: 1024)
    /// The published keys by kid, as JWK members.
    private var published: [String: [String: JSONValue]] = [:]
    /// A one-key collection per kid and algorithm: a JWK without `alg` serves any algorithm of
    /// its kind, and JWTKit makes a key without `alg` an RS256 key.
    private var collections: [String: JWTKeyCollection] = [:]
    private var lastFetch: ContinuousClock.Instant?
    private var refreshing: Task<Void, Never>?
    /// How many times the JWKS was fetched (for tests and logs).
    public private(set) var fetches = 0

    public init(refetchInterval: Duration = .seconds(30), minimumInterval: Duration = .seconds(1), fetch: @escaping Fetch) {
        self.fetch = fetch
        self.refetchInterval = refetchInterval
        self.minimumInterval = min(minimumInterval, refetchInterval)
    }

    /// The key `kid` for `algorithm`, or why there is none.
    func collection(for kid: String, algorithm: String) async -> Result<JWTKeyCollection, SecurityEventRefusal> {
        if published[kid] == nil, let refreshing {
            await refreshing.value
        }
        if published[kid] == nil {
            let now = ContinuousClock.now
            let lookedForLately = lookedFor.value(for: kid).map { now - $0 < refetchInterval } ?? false
            if !lookedForLately {
                if let last = lastFetch, now - last < minimumInterval {
                    return .failure(.retryLater(after: minimumInterval - (now - last)))
                }
                lookedFor.set(now, for: kid)
                let refresh = Task { await self.refresh() }
                refreshing = refresh
                await refresh.value
                refreshing = nil
            }
        }
        guard var fields = published[kid] else { return .failure(.invalidKey("the transmitter publishes no key with this kid")) }
        if let cached = collections[kid + " " + algorithm] { return .success(cached) }
        if let own = fields["alg"]?.stringValue, own != algorithm {
            return .failure(.invalidKey("the key with this kid is for another algorithm"))
        }
        let kind = algorithm == "ES256" ? "EC" : "RSA"
        guard fields["kty"]?.stringValue == kind, kind == "RSA" || fields["crv"]?.stringValue == "P-256" else {
            return .failure(.invalidKey("the key with this kid is not a key for \(algorithm)"))
        }
        fields["alg"] = .string(algorithm)
        let collection = JWTKeyCollection()
        guard let jwk = try? JSONDecoder().decode(JWK.self, from: Data(JSONValue.object(fields).canonicalEncoding())),
              (try? await collection.add(jwk: jwk, isDefault: false)) != nil else {
            return .failure(.invalidKey("the key with this kid cannot be read"))
        }
        collections[kid + " " + algorithm] = collection
        return .success(collection)
    }

    private func refresh() async {
        lastFetch = .now
        fetches += 1
        guard let document = try? await fetch(), let keys = try? Self.keys(from: document) else { return }
        if keys != published { collections = [:] }
        published = keys
    }

    /// The public RSA and EC keys of a JWKS document that have a `kid`.
    static func keys(from document: [UInt8]) throws -> [String: [String: JSONValue]] {
        guard case .object(let root) = try JSONValue.parse(document), case .array(let entries)? = root["keys"] else {
            throw SecurityEventRefusal.invalidKey("the transmitter's JWKS has no keys")
        }
        var keys: [String: [String: JSONValue]] = [:]
        for entry in entries {
            guard case .object(let fields) = entry, let kid = fields["kid"]?.stringValue,
                  let kty = fields["kty"]?.stringValue, ["RSA", "EC"].contains(kty),
                  fields["d"] == nil  // a private key has no business in a published set
            else { continue }
            keys[kid] = fields
        }
        return keys
    }
}
