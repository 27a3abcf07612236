import EchoRelayCore
import Foundation
import JWTKit

/// Verifies the Security Event Tokens (RFC 8417) a Shared Signals transmitter pushes (RFC
/// 8935): the JWS header, the signature with the transmitter's published keys, and the claims
/// every SET must carry. A refusal carries RFC 8935's error code and a description that never
/// quotes a key or the token.
public struct SecurityEventTokenVerifier: Sendable {
    /// The transmitter's exact `iss`.
    public let issuer: String
    /// Our `aud`: the token's `aud` (a string, or one member of an array) must equal it.
    public let audience: String
    public let keys: TransmitterKeys
    /// How far in the future `iat` may be (clocks differ a little).
    public let clockSkew: TimeInterval

    /// The signature algorithms a SET may use: no `none`, no HMAC (whose key would be public).
    public static let algorithms: Set<String> = ["RS256", "PS256", "ES256"]

    public init(issuer: String, audience: String, keys: TransmitterKeys, clockSkew: TimeInterval = 60) {
        self.issuer = issuer
        self.audience = audience
        self.keys = keys
        self.clockSkew = clockSkew
    }

    public func verify(_ token: String, now: Date = Date()) async -> Result<VerifiedSecurityEvent, SecurityEventRefusal> {
        do {
            return .success(try await checked(token, now: now))
        } catch let refusal as SecurityEventRefusal {
            return .failure(refusal)
        } catch {
            return .failure(.invalidKey("the signature does not verify with the transmitter's key"))
        }
    }

    private func checked(_ token: String, now: Date) async throws -> VerifiedSecurityEvent {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            throw SecurityEventRefusal.invalidRequest("the body is not a compact JWS (three base64url parts separated by dots)")
        }
        guard let headerBytes = Base64URL.decode(parts[0]),
              case .object(let header)? = try? JSONValue.parse(headerBytes) else {
            throw SecurityEventRefusal.invalidRequest("the JWS header is not a base64url JSON object")
        }
        guard let type = header["typ"]?.stringValue, ["secevent+jwt", "application/secevent+jwt"].contains(type.lowercased()) else {
            throw SecurityEventRefusal.invalidRequest("the JWS header's typ must be secevent+jwt")
        }
        guard let algorithm = header["alg"]?.stringValue, Self.algorithms.contains(algorithm) else {
            throw SecurityEventRefusal.invalidRequest("the JWS header's alg must be one of RS256, PS256 or ES256")
        }
        guard let kid = header["kid"]?.stringValue, !kid.isEmpty else {
            throw SecurityEventRefusal.invalidKey("the JWS header names no key (kid)")
        }
        let collection = try await keys.collection(for: kid, algorithm: algorithm).get()
        let claims: SecurityEventClaims
        do {
            claims = try await collection.verify(token, as: SecurityEventClaims.self)
        } catch let error as DecodingError {
            throw SecurityEventRefusal.invalidRequest("the claims are not a SET: \(Self.describe(error))")
        } catch {
            throw SecurityEventRefusal.invalidKey("the signature does not verify with the transmitter's key")
        }
        guard claims.iss == issuer else { throw SecurityEventRefusal.invalidIssuer("iss is not the configured transmitter") }
        guard claims.aud?.value.contains(audience) == true else {
            throw SecurityEventRefusal.invalidAudience("aud does not name this receiver")
        }
        guard let issuedAt = claims.iat else { throw SecurityEventRefusal.invalidRequest("iat is missing") }
        guard issuedAt.timeIntervalSince(now) <= clockSkew else {
            throw SecurityEventRefusal.invalidRequest("iat is in the future")
        }
        guard let jti = claims.jti, !jti.isEmpty else { throw SecurityEventRefusal.invalidRequest("jti is missing") }
        // SSF 1.0 §4.1.8, §4.1.9: the subject is sub_id, and a SET does not expire.
        guard claims.sub == nil else { throw SecurityEventRefusal.invalidRequest("a SET must not carry a sub claim: its subject is sub_id") }
        guard claims.exp == nil else { throw SecurityEventRefusal.invalidRequest("a SET must not carry an exp claim") }
        guard let events = claims.events else { throw SecurityEventRefusal.invalidRequest("events is missing") }
        guard events.count == 1, let (eventType, event) = events.first else {
            throw SecurityEventRefusal.invalidRequest("events must hold exactly one event, it holds \(events.count)")
        }
        return VerifiedSecurityEvent(jti: jti, issuer: issuer, issuedAt: issuedAt, eventType: eventType,
                                     event: event, subject: claims.subID)
    }

    /// A decoding error's path and kind, without the values it saw.
    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): "\(key.stringValue) is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            context.codingPath.map(\.stringValue).joined(separator: ".").nonEmpty.map { "\($0) has the wrong type" } ?? "malformed"
        @unknown default: "malformed"
        }
    }
}

/// A SET that verified: what the pipeline needs of it.
public struct VerifiedSecurityEvent: Sendable, Equatable {
    /// The transmitter's unique id of this SET: the idempotency key.
    public var jti: String
    public var issuer: String
    public var issuedAt: Date
    /// The event type URI, such as `https://schemas.openid.net/secevent/caep/event-type/credential-change`.
    public var eventType: String
    /// The event's own claims.
    public var event: JSONValue
    /// The top-level `sub_id` (RFC 9493), when the SET has one.
    public var subject: JSONValue?

    public init(jti: String, issuer: String, issuedAt: Date, eventType: String, event: JSONValue, subject: JSONValue?) {
        self.jti = jti
        self.issuer = issuer
        self.issuedAt = issuedAt
        self.eventType = eventType
        self.event = event
        self.subject = subject
    }
}

/// Why a SET is refused, as RFC 8935 §2.3 codes it, or (`retryAfter`) why it cannot be
/// checked yet.
public struct SecurityEventRefusal: Error, Sendable, Equatable {
    /// `invalid_request`, `invalid_key`, `invalid_issuer` or `invalid_audience`.
    public let code: String
    public let description: String
    /// Set when the verdict is not final: the SET names a key not yet known, which may be one
    /// the transmitter has just published, and the keys were fetched too lately to look again
    /// now. Such a SET is to come again after this long, not to be dropped.
    public var retryAfter: Duration? = nil

    static func retryLater(after delay: Duration) -> Self {
        .init(code: "invalid_key", description: "the transmitter publishes no key with this kid yet; its keys are fetched again in a moment",
              retryAfter: delay)
    }

    public static func invalidRequest(_ text: String) -> Self { .init(code: "invalid_request", description: text) }
    static func invalidKey(_ text: String) -> Self { .init(code: "invalid_key", description: text) }
    static func invalidIssuer(_ text: String) -> Self { .init(code: "invalid_issuer", description: text) }
    static func invalidAudience(_ text: String) -> Self { .init(code: "invalid_audience", description: text) }
}

/// The claims of a SET; each is optional here so that a missing one is refused by name.
struct SecurityEventClaims: JWTPayload {
    var iss: String?
    /// A string or an array of strings (RFC 7519 §4.1.3), as jwt-kit's claim reads it.
    var aud: AudienceClaim?
    /// Read as seconds since 1970 by jwt-kit's decoder.
    var iat: Date?
    var jti: String?
    var events: [String: JSONValue]?
    var subID: JSONValue?
    /// Refused when present (SSF 1.0): read whatever their type.
    var sub: JSONValue?
    var exp: JSONValue?

    enum CodingKeys: String, CodingKey {
        case iss, aud, iat, jti, events, sub, exp
        case subID = "sub_id"
    }

    /// The claims are checked by `SecurityEventTokenVerifier`, by name, after the signature.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

enum Base64URL {
    static func decode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
