import EchoRelayCore
import EchoRelayHTTP
import Foundation
import Testing
import TestSupport

/// The bodies of support actions: every bad field named, unknown fields refused, a reason
/// always required.
@Suite struct SupportRequestParsingTests {
    static func json(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object))
    }

    static func fields<T>(_ parse: ([UInt8]) throws(EventParseError) -> T, _ object: [String: Any]) -> [String] {
        do {
            _ = try parse(json(object))
            return []
        } catch {
            if case .invalidFields(let problems) = error { return problems.map(\.field) }
            return ["<malformed>"]
        }
    }

    @Test func aBulkReplayReadsEveryFilter() throws {
        let request = try BulkReplayRequest.parse(Self.json([
            "reason": "  ticket 42  ", "user_id": "u1", "subscription_id": "sub_1", "types": ["token.rotated", "token.rotated"],
            "since": "2026-11-01T00:00:00Z", "until": "2026-11-02T00:00:00.5Z", "status": "dead", "dry_run": true,
        ]))
        #expect(request.reason == "ticket 42")
        #expect(request.dryRun)
        #expect(request.filter.userID == "u1")
        #expect(request.filter.subscriptionID == "sub_1")
        #expect(request.filter.types == [.tokenRotated])
        #expect(request.filter.status == .dead)
        #expect(request.filter.until.map(RFC3339.format) == "2026-11-02T00:00:00.5Z")
        #expect(request.filter.json == .object([
            "user_id": .string("u1"), "subscription_id": .string("sub_1"), "types": .array([.string("token.rotated")]),
            "since": .string("2026-11-01T00:00:00Z"), "until": .string("2026-11-02T00:00:00.5Z"), "status": .string("dead"),
        ]))
    }

    @Test func aBulkReplayNamesEveryBadFieldAndRefusesUnknownOnes() {
        let fields = Self.fields(BulkReplayRequest.parse, [
            "user_id": "has space", "types": ["token.stolen"], "since": "yesterday", "status": "lost", "dry_run": "yes",
            "user": "u1",
        ])
        #expect(fields == ["reason", "user_id", "types", "since", "status", "dry_run", "user"])
        #expect(Self.fields(BulkReplayRequest.parse, ["reason": "r", "types": []]) == ["types"])
        #expect(Self.fields(BulkReplayRequest.parse, ["reason": "r", "since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"])
            == ["until"])
    }

    @Test(arguments: [
        ([:], "is required: a support action needs a reason for the audit log"),
        (["reason": NSNull()], "is required: a support action needs a reason for the audit log"),
        (["reason": " \n "], "must say why: a support action needs a reason for the audit log"),
        (["reason": 7], "must be a string, not a number"),
        (["reason": "bell\u{7}"], "must not contain control characters"),
        (["reason": String(repeating: "x", count: 1001)], "must be at most 1000 characters"),
    ] as [([String: any Sendable], String)])
    func everySupportActionNeedsAReason(body: [String: any Sendable], reason: String) {
        do {
            _ = try ReasonRequest.parse(Self.json(body))
            Issue.record("accepted \(body)")
        } catch {
            #expect(error == .invalidFields([FieldProblem(field: "reason", reason: reason)]))
        }
    }

    @Test func textWithANulCharacterOrATimeOutsideYears1To9999IsRefused() {
        #expect(Self.fields(BulkReplayRequest.parse, ["reason": "r", "subscription_id": "a\u{0}b", "user_id": "\u{0}",
                                                      "since": "0000-01-01T00:00:00Z"]) == ["user_id", "subscription_id", "since"])
        #expect(Self.fields(ReplayEventRequest.parse, ["reason": "r", "subscription_ids": ["sub_\u{0}"]]) == ["subscription_ids"])
        #expect(Self.fields(ReverifyRequest.parse, ["reason": "r", "echo": ["service_provider": "https://a.example/\u{0}",
                                                                           "authorization": "OAuth x=\"\u{0}\""]])
            == ["echo.service_provider", "echo.authorization"])
    }

    @Test func aReplayOfOneEventTakesSubscriptionIDs() throws {
        let request = try ReplayEventRequest.parse(Self.json(["reason": "r", "subscription_ids": ["sub_a", "sub_b", "sub_a"]]))
        #expect(request.subscriptionIDs == ["sub_a", "sub_b"])
        #expect(try ReplayEventRequest.parse(Self.json(["reason": "r"])).subscriptionIDs == nil)
        #expect(Self.fields(ReplayEventRequest.parse, ["reason": "r", "subscription_ids": "sub_a"]) == ["subscription_ids"])
        #expect(Self.fields(ReplayEventRequest.parse, ["reason": "r", "subscription_ids": [1]]) == ["subscription_ids"])
    }

    @Test func aReverifyNeedsFreshEchoCredentialsAndNeverQuotesThem() {
        let secretHeader = "Bearer not-oauth-secret-value"
        let fields = Self.fields(ReverifyRequest.parse, ["reason": "r", "echo": ["service_provider": "/relative", "authorization": secretHeader]])
        #expect(fields == ["echo.service_provider", "echo.authorization"])
        do {
            _ = try ReverifyRequest.parse(Self.json(["reason": "r", "echo": ["authorization": secretHeader]]))
        } catch {
            #expect(!"\(error)".contains("not-oauth-secret-value"))
        }
        #expect(Self.fields(ReverifyRequest.parse, ["reason": "r"]) == ["echo"])
    }

    @Test(arguments: [Array("not json".utf8), Array("[1]".utf8), [0xFF, 0xFE]])
    func aBodyThatIsNotAJSONObjectIsMalformed(bytes: [UInt8]) {
        #expect {
            _ = try RedriveRequest.parse(bytes)
        } throws: { error in
            if case .malformed = error as? EventParseError { return true }
            return false
        }
    }

    @Test func aRecoverNeedsOnlySinceAndNamesEveryBadField() throws {
        let request = try RecoverRequest.parse(Self.json(["since": "2026-11-01T00:00:00Z"]))
        #expect(request.since == RFC3339.parse("2026-11-01T00:00:00Z") && request.until == nil && request.reason == nil && !request.dryRun)
        let full = try RecoverRequest.parse(Self.json([
            "since": "2026-11-01T00:00:00Z", "until": "2026-11-02T00:00:00Z", "reason": " outage ", "dry_run": true,
        ]))
        #expect(full.reason == "outage" && full.dryRun && full.until == RFC3339.parse("2026-11-02T00:00:00Z"))
        #expect(Self.fields(RecoverRequest.parse, [:]) == ["since"])
        #expect(Self.fields(RecoverRequest.parse, ["since": NSNull()]) == ["since"])
        #expect(Self.fields(RecoverRequest.parse, ["since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"]) == ["until"])
        #expect(Self.fields(RecoverRequest.parse, ["since": "today", "reason": " ", "dry_run": 1, "subscription_id": "sub_1"])
            == ["reason", "since", "dry_run", "subscription_id"])
    }

    /// Random recover bodies never crash the parser, and whatever it accepts has its window.
    @Test func randomRecoverBodiesEitherParseWithAWindowOrNameAField() async {
        await Self.fuzz(names: ["since", "until", "dry_run", "reason", "user_id", "x"],
                        values: ["", "r", 0, true, NSNull(), [], ["a": 1], "2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z",
                                 "9999-12-31T23:59:59Z", "2026-13-01T00:00:00Z", "\u{0}", String(repeating: "é", count: 1001)]) { body in
            let request = try RecoverRequest.parse(body)
            #expect(request.until.map { request.since < $0 } ?? true)
            #expect(request.reason.map { SupportReason.problem($0) == nil } ?? true)
        }
    }

    /// Random bodies built from the fields' own names and odd values never crash the parser,
    /// and whatever it accepts has a reason.
    @Test func randomBodiesEitherParseWithAReasonOrNameAField() async {
        await Self.fuzz(names: ["reason", "user_id", "subscription_id", "types", "since", "until", "status", "dry_run", "echo", "x"],
                        values: ["", "r", "u1", 0, -1.5, true, NSNull(), [], ["token.rotated"], ["a": 1], "2026-11-01T00:00:00Z",
                                 "dead", String(repeating: "é", count: 70), "\u{0}"]) { body in
            let request = try BulkReplayRequest.parse(body)
            #expect(SupportReason.problem(request.reason) == nil)
        }
    }

    /// 2,000 bodies of a random choice of `names`, each with a random one of `values`: `parse`
    /// either accepts one (and checks it) or throws a field error that names a field.
    static func fuzz(names: [String], values: [Any], parse: ([UInt8]) throws -> Void) async {
        await offTheConcurrencyPool {
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<2000 {
                var object: [String: Any] = [:]
                for name in names where Bool.random(using: &generator) {
                    object[name] = values.randomElement(using: &generator)!
                }
                do {
                    try parse(json(object))
                } catch let error as EventParseError {
                    if case .invalidFields(let problems) = error { #expect(!problems.isEmpty) }
                } catch {
                    Issue.record("unexpected error \(error)")
                }
            }
        }
    }
}
