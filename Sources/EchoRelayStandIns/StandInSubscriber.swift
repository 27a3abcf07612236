import Crypto
import EchoRelayCore
import EchoRelayQueue
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// A stand-in app backend on an ephemeral loopback port: it accepts `POST` on any path,
/// checks every Standard Webhooks signature with its own code (`SubscriberSignatures` below,
/// not EchoRelay's `StandardWebhooks`), records every request it receives, and answers from
/// a script — a status with headers and body, or a hang — then with `defaultAnswer`.
public final class StandInSubscriber: Sendable {
    /// How one request is answered.
    public enum Answer: Sendable {
        /// This status, with these headers and this body (sent as `application/json` unless
        /// the headers name another `Content-Type`).
        case status(Int, headers: [(String, String)] = [], body: String = "")
        /// No answer for this long (a slow or stuck receiver), then `defaultAnswer`. Cut short
        /// with `503` when the subscriber stops, so a test's teardown never waits for it.
        case hang(Duration)
        /// `200` at once, then a body that never ends: one byte every `every` until the
        /// subscriber stops (a receiver that holds the exchange open past any deadline).
        case trickle(every: Duration)

        /// `200 {"ok":true}`.
        public static let ok = Answer.status(200, body: #"{"ok":true}"#)

        /// The status this answer sends at once; `nil` for a hang.
        public var statusCode: Int? {
            switch self {
            case .status(let code, _, _): code
            case .hang: nil
            case .trickle: 200
            }
        }
    }

    /// One request as the subscriber received it.
    public struct ReceivedDelivery: Sendable {
        /// Arrival order, from 0.
        public let index: Int
        public let path: String
        public let query: String?
        public let webhookID: String?
        /// The `webhook-timestamp` header as sent (unix seconds, as text).
        public let webhookTimestamp: String?
        /// The `v1,<base64>` entries of `webhook-signature`, in header order; other versions left out.
        public let signatures: [String]
        /// The known secrets (`whsec_…` text) for which some `v1,` entry matched.
        public let signedBy: Set<String>
        /// Whether `webhook-timestamp` was unix seconds within 5 minutes of the arrival time.
        public let timestampWithinTolerance: Bool
        public let userAgent: String?
        public let contentType: String?
        /// Every header, by lower-cased name; repeated headers joined with ", ".
        public let headers: [String: String]
        /// The raw body bytes.
        public let body: Data
        /// The body parsed as JSON; `nil` when it is not JSON.
        public let json: JSONValue?
        public let receivedAt: Date
        /// The answer this request was given (or, for a hang, is being given).
        public let answer: Answer

        /// True when some known secret produced one of the `v1,` entries.
        public var signatureValid: Bool { !signedBy.isEmpty }
        /// The body as a JSON object, if it is one.
        public var object: [String: JSONValue]? { json?.objectValue }
    }

    struct Secret {
        let text: String
        /// nil when the text is not `whsec_<base64>`: such a secret never matches.
        let key: SymmetricKey?
    }

    struct State {
        var secrets: [Secret] = []
        var script: [Answer] = []
        var pathScripts: [String: [Answer]] = [:]
        var defaultAnswer = Answer.ok
        var deliveries: [ReceivedDelivery] = []
        var port = 0
        var stopped = false
        var refusesBadSignatures = false
        var observer: (@Sendable (ReceivedDelivery, Int) -> Void)?
    }

    /// How far `webhook-timestamp` may be from the arrival time for `timestampWithinTolerance`.
    public static let timestampTolerance: TimeInterval = 5 * 60
    /// Bodies larger than this are refused with `413` (and not recorded).
    public static let bodyLimit = 4 << 20
    private let state = Mutex(State())
    /// Woken when the subscriber stops, to end every hang.
    private let released = WakeSignal()

    public init(secrets: [String] = []) {
        setSecrets(secrets)
    }

    // MARK: Set-up

    /// The secrets the subscriber knows (`whsec_<base64>`); a delivery's `signedBy` names
    /// each of them that signed it. Replaces the previous list; applies to later requests.
    public func setSecrets(_ secrets: [String]) {
        let parsed = secrets.map { Secret(text: $0, key: SubscriberSignatures.key(fromSecret: $0)) }
        state.withLock { $0.secrets = parsed }
    }

    /// Answers for the next requests, in order, after any answers still scripted.
    /// When none is left, requests get `defaultAnswer`.
    public func script(_ answers: [Answer]) {
        state.withLock { $0.script += answers }
    }

    /// Answers for the next requests to this path (e.g. `"/hooks"`), in order; they come
    /// before the general script. When none is left for the path, the general script applies.
    public func script(_ answers: [Answer], forPath path: String) {
        state.withLock { $0.pathScripts[path, default: []] += answers }
    }

    /// The answer once every script is used up. `200 {"ok":true}` unless changed.
    public var defaultAnswer: Answer {
        get { state.withLock { $0.defaultAnswer } }
        set { state.withLock { $0.defaultAnswer = newValue } }
    }

    /// Answers `401` to a delivery that no known secret signed, as a real subscriber does,
    /// instead of its scripted answer. Off unless set.
    public var refusesBadSignatures: Bool {
        get { state.withLock { $0.refusesBadSignatures } }
        set { state.withLock { $0.refusesBadSignatures = newValue } }
    }

    /// Called with each delivery as it is answered, and the status it gets.
    public func onDelivery(_ observer: @escaping @Sendable (ReceivedDelivery, Int) -> Void) {
        state.withLock { $0.observer = observer }
    }

    /// Forgets the deliveries received so far (the arrival index keeps counting).
    public func clearDeliveries() {
        state.withLock { $0.deliveries.removeAll() }
    }

    // MARK: Reading

    public var deliveries: [ReceivedDelivery] { state.withLock { $0.deliveries } }
    public var port: Int { state.withLock { $0.port } }

    /// `http://127.0.0.1:PORT/hooks`, or another path.
    public func url(_ path: String = "/hooks") -> String {
        "http://127.0.0.1:\(port)" + (path.hasPrefix("/") ? path : "/" + path)
    }

    // MARK: Running

    /// Serves for the length of `body`. Hanging requests are released when it ends.
    public func run<Result: Sendable>(_ body: @Sendable (StandInSubscriber) async throws -> Result) async throws -> Result {
        state.withLock { $0.stopped = false }
        return try await LoopbackServer.run(router(), onStop: { self.releaseHanging() }) { port in
            serving(onPort: port)
            return try await body(self)
        }
    }

    /// Its routes, for a server of the caller's (the demo's), which calls `serving(onPort:)`.
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/") { request, _ in await self.answer(request) }
        router.post("**") { request, _ in await self.answer(request) }
        return router
    }

    /// The port its server listens on, for `url(_:)`.
    public func serving(onPort port: Int) {
        state.withLock { $0.port = port }
    }

    /// Ends every hang now and makes later hangs end at once.
    private func releaseHanging() {
        state.withLock { $0.stopped = true }
        released.wake()
    }

    private var stopped: Bool { state.withLock { $0.stopped } }

    private func answer(_ request: Request) async -> Response {
        let received = Date()
        let body: Data
        do {
            body = Data(try await request.body.collect(upTo: Self.bodyLimit).readableBytesView)
        } catch {
            return Self.response(.status(413, body: #"{"error":"body too large"}"#))
        }

        var headers: [String: String] = [:]
        for field in request.headers {
            let name = field.name.canonicalName
            headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
        }
        let id = request.headers[HTTPField.Name("webhook-id")!]
        let timestamp = request.headers[HTTPField.Name("webhook-timestamp")!]
        let signatureHeader = request.headers[values: HTTPField.Name("webhook-signature")!].joined(separator: " ")
        let signatures = signatureHeader.split(separator: " ").map(String.init).filter { $0.hasPrefix("v1,") }
        let path = request.uri.path
        let json = try? JSONValue.parse(body)
        let timestampFresh = timestamp.flatMap { text -> Bool? in
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  let seconds = Int64(text) else { return nil }
            return abs(Double(seconds) - received.timeIntervalSince1970) <= Self.timestampTolerance
        } ?? false

        let (answer, fallback, observer, delivery) = state.withLock {
            state -> (Answer, Answer, (@Sendable (ReceivedDelivery, Int) -> Void)?, ReceivedDelivery) in
            let signedBy: Set<String>
            if let id, let timestamp {
                signedBy = Set(state.secrets.filter { secret in
                    guard let key = secret.key else { return false }
                    return SubscriberSignatures.matches(signatures, id: id, timestamp: timestamp, body: body, key: key)
                }.map(\.text))
            } else {
                signedBy = []
            }
            var answer: Answer
            if var queue = state.pathScripts[path], !queue.isEmpty {
                answer = queue.removeFirst()
                state.pathScripts[path] = queue
            } else if !state.script.isEmpty {
                answer = state.script.removeFirst()
            } else {
                answer = state.defaultAnswer
            }
            if state.refusesBadSignatures, signedBy.isEmpty {
                answer = .status(401, body: #"{"error":"invalid signature"}"#)
            }
            let delivery = ReceivedDelivery(
                index: (state.deliveries.last?.index ?? -1) + 1, path: path, query: request.uri.query,
                webhookID: id, webhookTimestamp: timestamp, signatures: signatures, signedBy: signedBy,
                timestampWithinTolerance: timestampFresh, userAgent: request.headers[.userAgent],
                contentType: request.headers[.contentType], headers: headers, body: body, json: json,
                receivedAt: received, answer: answer
            )
            state.deliveries.append(delivery)
            return (answer, state.defaultAnswer, state.observer, delivery)
        }
        observer?(delivery, answer.statusCode ?? 200)

        switch answer {
        case .status:
            return Self.response(answer)
        case .trickle(let interval):
            return trickle(every: interval)
        case .hang(let duration):
            let released = await hang(for: duration)
            if released { return Self.response(.status(503, body: #"{"error":"subscriber stopped"}"#)) }
            return Self.response(fallback)  // `.ok` for a hang or a trickle
        }
    }

    /// Sleeps for `duration` unless the subscriber stops or the request is cancelled first;
    /// returns true when cut short.
    private func hang(for duration: Duration) async -> Bool {
        let end = ContinuousClock.now + duration
        // A loop, not one wait: a wake that found no hang waiting is remembered (the last
        // stop's, for a subscriber run again), and ends the next wait at once. A stop just as
        // a hang starts to wait can miss it; the server's shutdown then cancels the request.
        while !stopped, !Task.isCancelled, ContinuousClock.now < end {
            await released.wait(upTo: end - ContinuousClock.now)
        }
        return stopped || Task.isCancelled
    }

    private func trickle(every interval: Duration) -> Response {
        Response(status: .ok, body: ResponseBody { writer in
            while !self.stopped {
                try await writer.write(ByteBuffer(string: " "))
                try await Task.sleep(for: interval)
            }
            try await writer.finish(nil)
        })
    }

    private static func response(_ answer: Answer) -> Response {
        guard case .status(let status, let extraHeaders, let body) = answer else {
            return response(.ok)
        }
        var fields = HTTPFields()
        for (name, value) in extraHeaders {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        if !body.isEmpty, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}

/// The subscriber's own Standard Webhooks check, written separately from EchoRelay's
/// `StandardWebhooks` so that a bug in one is caught by the other.
enum SubscriberSignatures {
    /// The HMAC key of `whsec_<base64>` (padding optional), or nil if it is not that shape.
    static func key(fromSecret secret: String) -> SymmetricKey? {
        guard secret.hasPrefix("whsec_") else { return nil }
        var encoded = String(secret.dropFirst("whsec_".count))
        while encoded.count % 4 != 0 { encoded += "=" }
        guard let bytes = Data(base64Encoded: encoded), !bytes.isEmpty else { return nil }
        return SymmetricKey(data: bytes)
    }

    /// `v1,` followed by the base64 HMAC-SHA256 of `id.timestamp.body`.
    static func expected(id: String, timestamp: String, body: Data, key: SymmetricKey) -> String {
        var content = Data(id.utf8)
        content.append(UInt8(ascii: "."))
        content.append(contentsOf: timestamp.utf8)
        content.append(UInt8(ascii: "."))
        content.append(body)
        return "v1," + Data(HMAC<SHA256>.authenticationCode(for: content, using: key)).base64EncodedString()
    }

    /// Whether any of the `v1,` entries is the signature of this message under `key`.
    static func matches(_ entries: [String], id: String, timestamp: String, body: Data, key: SymmetricKey) -> Bool {
        let expected = expected(id: id, timestamp: timestamp, body: body, key: key)
        return entries.contains(expected)
    }
}
