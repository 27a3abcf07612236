import AsyncHTTPClient
import EchoRelayCore
import Foundation
import NIOCore
import NIOHTTP1

/// One poll of RFC 8936: the request EchoRelay sends and the transmitter's answer.
public enum PollExchange {
    /// What a poll says: how many SETs it takes, that it waits for them, and what became of
    /// those the last answer held.
    public struct Request: Sendable, Equatable {
        public var maxEvents: Int
        public var returnImmediately: Bool
        /// The `jti`s of SETs committed since the last poll.
        public var ack: [String]
        /// The `jti`s of SETs that failed a check, with RFC 8935's code and why.
        public var setErrs: [String: SetError]

        public init(maxEvents: Int, returnImmediately: Bool = false, ack: [String] = [], setErrs: [String: SetError] = [:]) {
            self.maxEvents = maxEvents
            self.returnImmediately = returnImmediately
            self.ack = ack
            self.setErrs = setErrs
        }

        public func body() -> [UInt8] {
            var document: [String: JSONValue] = [
                "maxEvents": .integer(Int64(maxEvents)), "returnImmediately": .bool(returnImmediately),
                "ack": .array(ack.map(JSONValue.string)),
            ]
            if !setErrs.isEmpty {
                document["setErrs"] = .object(setErrs.mapValues { .object(["err": .string($0.err), "description": .string($0.description)]) })
            }
            return Array(JSONValue.object(document).canonicalEncoding())
        }
    }

    public struct SetError: Sendable, Equatable {
        public var err: String
        public var description: String

        public init(err: String, description: String) {
            self.err = err
            self.description = description
        }
    }

    /// The transmitter's answer: its SETs in the order it wrote them, and whether it holds more.
    public struct Answer: Sendable, Equatable {
        public var sets: [(jti: String, token: String)]
        public var moreAvailable: Bool

        public init(sets: [(jti: String, token: String)], moreAvailable: Bool) {
            self.sets = sets
            self.moreAvailable = moreAvailable
        }

        public static func == (lhs: Answer, rhs: Answer) -> Bool {
            lhs.moreAvailable == rhs.moreAvailable && lhs.sets.elementsEqual(rhs.sets) { $0.jti == $1.jti && $0.token == $1.token }
        }

        /// Reads `{"sets": {jti: SET}, "moreAvailable": bool}`. A JSON object has no order,
        /// but a transmitter writes a user's SETs in the order they happened, so they are taken
        /// in the order their keys stand in the text; a `jti` named twice is refused, as no
        /// one reading could tell which SET it meant.
        public static func parse(_ body: [UInt8]) throws(PollError) -> Answer {
            guard case .object(let root)? = try? JSONValue.parse(body) else {
                throw .malformed("the answer is not a JSON object")
            }
            let sets: [String: JSONValue]
            switch root["sets"] {
            case .object(let found): sets = found
            case nil, .null: sets = [:]
            default: throw .malformed("sets is not an object")
            }
            let moreAvailable: Bool
            switch root["moreAvailable"] {
            case .bool(let flag): moreAvailable = flag
            case nil, .null: moreAvailable = false
            default: throw .malformed("moreAvailable is not a boolean")
            }
            let order = SetsKeys.inOrder(body)
            guard order.count == sets.count, Set(order).count == order.count else {
                throw .malformed("sets names a jti more than once")
            }
            var answer = Answer(sets: [], moreAvailable: moreAvailable)
            for jti in order {
                guard case .string(let token)? = sets[jti] else { throw .malformed("the SET under a jti is not a string") }
                answer.sets.append((jti, token))
            }
            return answer
        }
    }

    /// The keys of the top-level `sets` object of a document already known to be valid JSON,
    /// in the order they are written, duplicates kept. One pass: strings (with their escapes)
    /// and the nesting of brackets.
    enum SetsKeys {
        static func inOrder(_ body: [UInt8]) -> [String] {
            var keys: [String] = []
            var depth = 0
            var index = 0
            // Inside the root's `sets` object (its keys stand at depth 2); it is read once.
            var inSets = false, setsRead = false
            var lastKeyAtRoot: String?
            while index < body.count {
                let byte = body[index]
                switch byte {
                case UInt8(ascii: "\""):
                    let start = index
                    index += 1
                    while index < body.count, body[index] != UInt8(ascii: "\"") {
                        index += body[index] == UInt8(ascii: "\\") ? 2 : 1
                    }
                    let text = (try? JSONValue.parse(body[start ... min(index, body.count - 1)]))?.stringValue
                    // A string is a key when a colon follows it.
                    var next = index + 1
                    while next < body.count, [0x20, 0x09, 0x0A, 0x0D].contains(body[next]) { next += 1 }
                    if next < body.count, body[next] == UInt8(ascii: ":"), let text {
                        if inSets, depth == 2 { keys.append(text) }
                        if depth == 1 { lastKeyAtRoot = text }
                    }
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                    if byte == UInt8(ascii: "{"), depth == 2, lastKeyAtRoot == "sets", !setsRead { inSets = true }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if inSets, depth == 2 { inSets = false; setsRead = true }
                    depth -= 1
                case UInt8(ascii: ","):
                    if depth == 1 { lastKeyAtRoot = nil }
                default:
                    break
                }
                index += 1
            }
            return keys
        }
    }

    /// Why a poll failed: no answer, an answer other than `200`, or one that does not read.
    public enum PollError: Error, Sendable, Equatable, CustomStringConvertible {
        case unreachable(String)
        case timedOut
        case status(Int, retryAfter: Duration?)
        case malformed(String)

        /// The metric's label.
        public var kind: String {
            switch self {
            case .unreachable: "connection"
            case .timedOut: "timeout"
            case .status: "status"
            case .malformed: "malformed"
            }
        }

        public var description: String {
            switch self {
            case .unreachable(let why): "the transmitter could not be reached: \(why)"
            case .timedOut: "the transmitter held the poll past ECHORELAY_SET_POLL_WAIT"
            case .status(let code, _): "the transmitter answered \(code)"
            case .malformed(let why): "the transmitter's answer does not read as RFC 8936: \(why)"
            }
        }
    }

    /// The most a poll's answer may hold.
    public static let maximumAnswerSize = 16 * 1024 * 1024

    /// Sends `request` to `url` with `Authorization: Bearer token`, and reads the answer
    /// within `timeout`. No redirect is followed (the client's configuration).
    public static func send(
        _ request: Request, to url: String, token: Secret?, timeout: Duration, client: HTTPClient = JWKSFetch.client
    ) async throws(PollError) -> Answer {
        var http = HTTPClientRequest(url: url)
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/json")
        http.headers.add(name: "Accept", value: "application/json")
        if let token { http.headers.add(name: "Authorization", value: "Bearer " + token.revealed) }
        http.body = .bytes(request.body())
        let body: ByteBuffer
        do {
            let response = try await client.execute(http, timeout: .init(timeout))
            guard response.status == .ok else {
                let retryAfter = response.headers.first(name: "Retry-After").flatMap(Int.init).map { Duration.seconds($0) }
                throw PollError.status(Int(response.status.code), retryAfter: retryAfter)
            }
            body = try await response.body.collect(upTo: maximumAnswerSize)
        } catch let error as PollError {
            throw error
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw .timedOut
        } catch {
            // The error's text names the host and the failure, never the request's headers.
            throw .unreachable(String(describing: error))
        }
        return try Answer.parse(Array(body.readableBytesView))
    }
}
