import Foundation
import NIOHTTP1
#if canImport(Glibc)
import Glibc
#endif

/// A Shared Signals Framework (SSF 1.0) transmitter on loopback (`Tests/Tools/ssf_transmitter.py`,
/// a real child process). It serves its configuration document, JWKS, stream management,
/// verification, and RFC 8936 poll endpoints. It pushes SETs (RFC 8935) to a receiver's endpoint,
/// signed by jwcrypto, so EchoRelay's receiver is tested against code nobody here wrote. The
/// control API sets what the transmitter sends and how it misbehaves. It also reads back what
/// the receiver did: its requests, acks, and errors.
public final class SSFTransmitter: Sendable {
    public let port: Int
    /// `http://127.0.0.1:PORT`, or `http://127.0.0.1:PORT/TENANT` when started with a path.
    public let issuer: String
    /// The bearer token every protocol endpoint but the configuration and the JWKS wants.
    public let token: String
    /// The `aud` of every stream and of every SET not naming its own.
    public let audience: String
    private let tenant: String?
    private let child: ChildProcess
    private let http: HTTPTestClient

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var wellKnownURL: String { baseURL + "/.well-known/ssf-configuration" + (tenant.map { "/" + $0 } ?? "") }
    public var jwksURL: String { baseURL + "/jwks" }
    /// The poll endpoint of the default queue, for a receiver given a poll URL and no stream.
    public var defaultPollURL: String { baseURL + "/poll" }
    /// The poll endpoint of a stream made through the stream management API.
    public func pollURL(stream streamID: String) -> String { baseURL + "/ssf/poll/" + streamID }

    /// - path: a tenant. The issuer and the configuration document's path then end in it, as
    ///   with a multi-tenant transmitter.
    /// - longPollWait: how long a poll that finds nothing waits for a SET, in seconds.
    public init(token: String, path: String? = nil, audience: String = "echorelay", longPollWait: Double = 2) async throws {
        let trimmed = path?.trimmingCharacters(in: CharacterSet(charactersIn: "/")) ?? ""
        let tenant = trimmed.isEmpty ? nil : trimmed
        self.tenant = tenant
        var arguments = ["--token", token, "--audience", audience, "--long-poll-wait", String(longPollWait)]
        if let tenant { arguments += ["--path", tenant] }
        (child, port) = try await PythonTool.start("ssf_transmitter.py", arguments, what: "the SSF transmitter", install: "jwcrypto")
        self.token = token
        self.audience = audience
        issuer = "http://127.0.0.1:\(port)" + (tenant.map { "/" + $0 } ?? "")
        http = HTTPTestClient(port: port)
    }

    deinit {
        child.signal(SIGKILL)
    }

    // MARK: - Control

    @discardableResult
    private func control(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        let response = try await http.send(.POST, "/control/" + path, headers: [("Content-Type", "application/json")],
                                           body: Array(try JSONSerialization.data(withJSONObject: body)))
        guard response.status == 200, let json = response.json else {
            throw TestSetupError("the SSF transmitter's /control/\(path) answered \(response.status): \(response.text)")
        }
        return json
    }

    private func read(_ path: String) async throws -> Any {
        let response = try await http.get("/control/" + path)
        guard response.status == 200, let json = try? JSONSerialization.jsonObject(with: response.body) else {
            throw TestSetupError("the SSF transmitter's /control/\(path) answered \(response.status): \(response.text)")
        }
        return json
    }

    /// Signs `sets` and queues them for polling on `queue` ("default", the queue of
    /// `defaultPollURL`, or a stream id). The SETs of a push stream are pushed instead, one after
    /// another, before this returns (see `pushes()`). Returns their `jti`s.
    @discardableResult
    public func enqueue(_ sets: [SETSpec], queue: String = "default") async throws -> [String] {
        let answer = try await control("sets", ["queue": queue, "sets": sets.map(\.json)])
        return answer["jtis"] as? [String] ?? []
    }

    /// The compact JWS of each of `sets`, queued nowhere, for pushing by hand.
    public func sign(_ sets: [SETSpec]) async throws -> [String] {
        try await control("sign", ["sets": sets.map(\.json)])["tokens"] as? [String] ?? []
    }

    /// Makes an RSA 2048 key `kid`, or changes the one of that kid. `publish` puts it in the
    /// JWKS, or (false) takes it out. `signing` makes it the key of every SET not naming
    /// another. An unpublished key signs SETs the receiver cannot check until it is published:
    /// a key rotation.
    public func addKey(kid: String, publish: Bool = true, signing: Bool = false) async throws {
        try await control("keys", ["kid": kid, "publish": publish, "signing": signing])
    }

    /// Changes the configuration document: sets `set`'s fields and drops `remove`'s, so that
    /// a receiver is shown a wrong issuer, say, or no `jwks_uri`.
    public func setMetadata(_ set: [String: any Sendable] = [:], remove: [String] = []) async throws {
        try await control("metadata", ["set": set as [String: Any], "remove": remove])
    }

    /// What the `state` of the next verification event is: the one asked for, another
    /// (`wrong`), or none at all (`missing`).
    public enum VerificationState: String, Sendable {
        case asAsked = "as-asked"
        case wrong
        case missing
    }

    public func nextVerification(state: VerificationState) async throws {
        try await control("verification", ["state": state.rawValue])
    }

    /// Whether stream configurations echo the receiver's `authorization_header` back, as some
    /// transmitters do.
    public func echoAuthorization(_ on: Bool) async throws {
        try await control("echo-authorization", ["on": on])
    }

    /// The next `count` poll requests get `status` and no body after `delay` seconds. With
    /// `drop`, their connection is closed with no answer instead.
    public func outage(_ count: Int, status: Int? = 503, delay: Double = 0, drop: Bool = false) async throws {
        var body: [String: Any] = ["count": count, "delay": delay, "drop": drop]
        if let status { body["status"] = status }
        try await control("outage", body)
    }

    // MARK: - What the receiver did

    /// One request the transmitter received at its protocol endpoints.
    public struct Received: Sendable {
        public let method: String
        /// With its query string.
        public let path: String
        /// Header names lower-cased.
        public let headers: [String: String]
        /// The JSON body, re-encoded, or nil when there was none or it was not JSON. Kept as
        /// `Data` so that the struct is Sendable.
        public let body: Data?

        public var json: [String: Any]? {
            body.flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
        }
    }

    public func requests() async throws -> [Received] {
        guard let items = try await read("requests") as? [[String: Any]] else {
            throw TestSetupError("the SSF transmitter's request log is not a JSON array")
        }
        return items.map { item in
            let headers = (item["headers"] as? [String: String] ?? [:]).reduce(into: [String: String]()) { $0[$1.key.lowercased()] = $1.value }
            var body: Data?
            if let json = item["json"], !(json is NSNull) {
                body = try? JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed])
            }
            return Received(method: item["method"] as? String ?? "", path: item["path"] as? String ?? "", headers: headers, body: body)
        }
    }

    /// How many times each `jti` was acknowledged in a poll.
    public func acked() async throws -> [String: Int] {
        (try await read("acked") as? [String: Any] ?? [:]).compactMapValues { $0 as? Int }
    }

    /// An error a receiver reported for a SET in a poll's `setErrs` (RFC 8936 §2.4.4).
    public struct SETError: Sendable, Equatable {
        public let err: String
        public let description: String

        public init(err: String, description: String) {
            self.err = err
            self.description = description
        }
    }

    public func errors() async throws -> [String: SETError] {
        (try await read("errors") as? [String: Any] ?? [:]).compactMapValues { (value: Any) -> SETError? in
            guard let error = value as? [String: Any], let err = error["err"] as? String else { return nil }
            return SETError(err: err, description: error["description"] as? String ?? "")
        }
    }

    /// The `jti`s of each queue not yet acknowledged (or reported as errors), in delivery order.
    public func pending() async throws -> [String: [String]] {
        (try await read("pending") as? [String: Any] ?? [:]).compactMapValues { $0 as? [String] }
    }

    /// Every stream's configuration as the receiver would read it, plus `status`, `reason`,
    /// and the `authorization_header` the receiver gave for pushes (never shown to it).
    public func streams() async throws -> [[String: Any]] {
        try await read("streams") as? [[String: Any]] ?? []
    }

    /// One push attempted to a push stream's receiver.
    public struct Push: Sendable, Equatable {
        public let url: String
        /// The receiver's answer, or nil when there was none (refused, reset, timed out).
        public let status: Int?
        /// The receiver's answer body, or why there was none.
        public let body: String
        public let jti: String
    }

    public func pushes() async throws -> [Push] {
        (try await read("pushes") as? [[String: Any]] ?? []).map { item in
            Push(url: item["url"] as? String ?? "", status: item["status"] as? Int, body: item["body"] as? String ?? "",
                 jti: item["jti"] as? String ?? "")
        }
    }

    /// How many times the JWKS was served: a receiver should fetch it once, then again only
    /// for an unknown `kid`.
    public func jwksFetches() async throws -> Int {
        (try await read("jwks-fetches") as? [String: Any])?["count"] as? Int ?? 0
    }
}

/// One SET for the transmitter to sign with jwcrypto, or, with `raw`, to send as it is. Values
/// are JSON: strings, numbers, booleans, arrays, and `[String: any Sendable]` objects.
public struct SETSpec: Sendable {
    public static let caep = "https://schemas.openid.net/secevent/caep/event-type/"
    public static let risc = "https://schemas.openid.net/secevent/risc/event-type/"
    public static let ssf = "https://schemas.openid.net/secevent/ssf/event-type/"

    /// The `jti`, also the SET's key in poll answers; random when nil.
    public var jti: String?
    public var eventType: String
    /// The event's members: `events[eventType]`.
    public var event: [String: any Sendable]
    public var subID: [String: any Sendable]?
    /// The signing key: any key made with `addKey`, published or not. Nil means the
    /// transmitter's signing key.
    public var kid: String?
    /// Top-level claims added or replaced after the usual ones (`iss`, `aud`, `iat`, `jti`,
    /// `events`, `sub_id`), such as `["exp": 1]`, `["iss": "https://other"]`, or `["aud": ["a", "b"]]`.
    public var claims: [String: any Sendable]
    /// Claims dropped after that, such as `["jti"]` or `["iat"]`.
    public var remove: [String]
    /// The protected header's `typ`. Nil leaves it out.
    public var typ: String?
    /// Sent as the SET in place of a signed one (something that is not a JWS, say).
    public var raw: String?

    public init(
        _ eventType: String, event: [String: any Sendable] = [:], subID: [String: any Sendable]? = nil, jti: String? = nil,
        kid: String? = nil, claims: [String: any Sendable] = [:], remove: [String] = [], typ: String? = "secevent+jwt"
    ) {
        self.eventType = eventType
        self.event = event
        self.subID = subID
        self.jti = jti
        self.kid = kid
        self.claims = claims
        self.remove = remove
        self.typ = typ
    }

    /// `text` delivered as a SET, unsigned and unchanged.
    public static func raw(_ text: String, jti: String? = nil) -> SETSpec {
        var spec = SETSpec("", jti: jti)
        spec.raw = text
        return spec
    }

    /// A CAEP credential change (a password update) of the account `sub` at `iss`.
    public static func credentialChange(iss: String, sub: String, jti: String? = nil) -> SETSpec {
        SETSpec(caep + "credential-change", event: ["credential_type": "password", "change_type": "update"],
                subID: issSub(iss: iss, sub: sub), jti: jti)
    }

    /// Subject identifiers (RFC 9493) for `subID`.
    public static func issSub(iss: String, sub: String) -> [String: any Sendable] { ["format": "iss_sub", "iss": iss, "sub": sub] }
    public static func opaque(_ id: String) -> [String: any Sendable] { ["format": "opaque", "id": id] }
    public static func email(_ address: String) -> [String: any Sendable] { ["format": "email", "email": address] }

    /// The control API's SPEC object.
    var json: [String: Any] {
        var object: [String: Any] = [:]
        if let jti { object["jti"] = jti }
        if let raw {
            object["raw"] = raw
            return object
        }
        object["event_type"] = eventType
        object["event"] = event as [String: Any]
        if let subID { object["sub_id"] = subID as [String: Any] }
        if let kid { object["kid"] = kid }
        if !claims.isEmpty { object["claims"] = claims as [String: Any] }
        if !remove.isEmpty { object["remove"] = remove }
        object["typ"] = typ.map { $0 as Any } ?? NSNull()
        return object
    }
}
