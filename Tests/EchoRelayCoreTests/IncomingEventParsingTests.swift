import EchoRelayCore
import Foundation
import Testing

@Suite struct IncomingEventParsingTests {
    static func body(_ changes: (inout [String: Any]) -> Void = { _ in }) -> [UInt8] {
        var object: [String: Any] = [
            "id": "evt_01.a:b-c",
            "type": "phone.changed",
            "user_id": "4815162342",
            "occurred_at": "2026-11-23T10:15:30Z",
            "data": ["phone_number": "+15555550100"],
            "echo": [
                "service_provider": "https://api.digits.com/1.1/sdk/account.json",
                "authorization": #"OAuth oauth_consumer_key="ck", oauth_signature="s%3D""#,
            ],
        ]
        changes(&object)
        return Array(try! JSONSerialization.data(withJSONObject: object))
    }

    static func problems(_ bytes: [UInt8]) -> [FieldProblem] {
        do {
            _ = try IncomingEvent.parse(body: bytes)
            return []
        } catch {
            if case .invalidFields(let problems) = error { return problems }
            return [FieldProblem(field: "<malformed>", reason: "\(error)")]
        }
    }

    @Test func parsesAValidEvent() throws {
        let event = try IncomingEvent.parse(body: Self.body())
        #expect(event.id == "evt_01.a:b-c")
        #expect(event.type == .phoneChanged)
        #expect(event.userID == "4815162342")
        #expect(event.occurredAt == Date(timeIntervalSince1970: 1_795_428_930))
        #expect(event.phoneNumber == "+15555550100")
        #expect(event.echo?.serviceProvider == "https://api.digits.com/1.1/sdk/account.json")
        #expect(event.echo?.authorization.revealed.hasPrefix("OAuth ") == true)
    }

    @Test func dataIsOptionalForOtherTypes() throws {
        let event = try IncomingEvent.parse(body: Self.body { $0["type"] = "token.rotated"; $0["data"] = nil })
        #expect(event.type == .tokenRotated)
        #expect(event.phoneNumber == nil)
    }

    @Test func fingerprintIgnoresKeyOrderAndSpacing() throws {
        let compact = #"{"id":"e1","type":"token.rotated","user_id":"u","occurred_at":"2026-01-01T00:00:00Z","echo":{"service_provider":"https://a.example/v","authorization":"OAuth x=1"}}"#
        let spaced = #"{ "echo": {"authorization": "OAuth x=1", "service_provider": "https://a.example/v"}, "occurred_at": "2026-01-01T00:00:00Z", "user_id": "u", "type": "token.rotated", "id": "e1" }"#
        let changed = compact.replacingOccurrences(of: "\"u\"", with: "\"v\"")
        let a = try IncomingEvent.parse(body: Array(compact.utf8)).fingerprint
        let b = try IncomingEvent.parse(body: Array(spaced.utf8)).fingerprint
        let c = try IncomingEvent.parse(body: Array(changed.utf8)).fingerprint
        #expect(a == b)
        #expect(a != c)
    }

    @Test(arguments: [
        ("id", nil, "is required"),
        ("id", "", "must be 1 to 128 characters long"),
        ("id", String(repeating: "a", count: 129), "must be 1 to 128 characters long"),
        ("id", "evt/1", "may contain only letters, digits and . _ : -"),
        ("id", "évt", "may contain only letters, digits and . _ : -"),
        ("type", "token.revoked", EventFieldRules.typeReason),
        ("user_id", "", "must be 1 to 64 characters long"),
        ("user_id", String(repeating: "u", count: 65), "must be 1 to 64 characters long"),
        ("user_id", "a b", "must not contain white space"),
        ("user_id", "a\tb", "must not contain white space"),
        ("user_id", "a\u{0}b", "must contain only printable characters"),
        ("user_id", "a\u{200B}b", "must contain only printable characters"),
        ("occurred_at", "yesterday", "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z"),
        ("occurred_at", "2026-11-23T10:15:30", "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z"),
    ] as [(String, String?, String)])
    func refusesABadTopLevelField(field: String, value: String?, reason: String) {
        let problems = Self.problems(Self.body { $0[field] = value })
        #expect(problems == [FieldProblem(field: field, reason: reason)])
    }

    @Test func namesAFieldOfTheWrongType() {
        #expect(Self.problems(Self.body { $0["user_id"] = 42 })
            == [FieldProblem(field: "user_id", reason: "must be a string, not a number")])
        #expect(Self.problems(Self.body { $0["data"] = "x" })
            == [FieldProblem(field: "data", reason: "must be an object, not a string")])
        #expect(Self.problems(Self.body { $0["echo"] = [1] })
            == [FieldProblem(field: "echo", reason: "must be an object, not an array")])
    }

    @Test func acceptsPrintableUnicodeUserIDs() throws {
        #expect(try IncomingEvent.parse(body: Self.body { $0["user_id"] = "usér-ß:42" }).userID == "usér-ß:42")
    }

    @Test(arguments: ["15555550100", "+05555550100", "+1", "+1555555010012345", "+1 555 555 0100", "+1555-555"])
    func refusesANonE164PhoneNumber(phone: String) {
        #expect(Self.problems(Self.body { $0["data"] = ["phone_number": phone] })
            == [FieldProblem(field: "data.phone_number", reason: "must be an E.164 phone number such as +15555550100")])
    }

    @Test func phoneChangedRequiresAPhoneNumber() {
        #expect(Self.problems(Self.body { $0["data"] = nil })
            == [FieldProblem(field: "data", reason: "is required for phone.changed")])
        #expect(Self.problems(Self.body { $0["data"] = [:] as [String: Any] })
            == [FieldProblem(field: "data.phone_number", reason: "is required")])
    }

    @Test func echoIsRequiredAndChecked() {
        #expect(Self.problems(Self.body { $0["echo"] = nil }) == [FieldProblem(field: "echo", reason: "is required")])
        let problems = Self.problems(Self.body {
            $0["echo"] = ["service_provider": "/1.1/account.json", "authorization": "Bearer abc"]
        })
        #expect(problems.map(\.field) == ["echo.service_provider", "echo.authorization"])
    }

    @Test func anOAuth2AccessTokenIsTheOtherProof() throws {
        let event = try IncomingEvent.parse(body: Self.body { $0["echo"] = nil; $0["oauth2"] = ["access_token": "eyJhbGci.eyJzdWIi.c2ln-_~+/=="] })
        #expect(event.echo == nil)
        #expect(event.oauth2?.accessToken.revealed == "eyJhbGci.eyJzdWIi.c2ln-_~+/==")
        #expect(event.path == .oauth2)
        #expect(try IncomingEvent.parse(body: Self.body()).path == .echo)
        // null counts as absent, for either proof.
        #expect(try IncomingEvent.parse(body: Self.body { $0["oauth2"] = NSNull() }).path == .echo)
        #expect(try IncomingEvent.parse(body: Self.body { $0["echo"] = NSNull(); $0["oauth2"] = ["access_token": "abc"] }).path == .oauth2)
    }

    @Test func exactlyOneProofIsTaken() {
        let both = Self.problems(Self.body { $0["oauth2"] = ["access_token": "abc"] })
        #expect(both == [FieldProblem(field: "oauth2", reason: "must not be sent with echo: an event carries exactly one of echo and oauth2")])
        #expect(Self.problems(Self.body { $0["echo"] = nil }) == [FieldProblem(field: "echo", reason: "is required")])
    }

    /// Each bad proof: where the problem is, the JSON of `oauth2` (`{"access_token": X}` for
    /// the token's cases, X empty for none), and the reason.
    @Test(arguments: [
        ("oauth2", #""a string""#, "must be an object, not a string"),
        ("oauth2.access_token", "", "is required"),
        ("oauth2.access_token", "12", "must be a string, not a number"),
        ("oauth2.access_token", #""""#, "must be 1 to 4096 characters long"),
        ("oauth2.access_token", "\"" + String(repeating: "a", count: 4097) + "\"", "must be 1 to 4096 characters long"),
        ("oauth2.access_token", #""Bearer abc""#, "must be an OAuth 2 bearer token: letters, digits and - . _ ~ + /, then any = padding"),
        ("oauth2.access_token", #""ab=c""#, "must be an OAuth 2 bearer token: letters, digits and - . _ ~ + /, then any = padding"),
        ("oauth2.access_token", #""abc\n""#, "must be an OAuth 2 bearer token: letters, digits and - . _ ~ + /, then any = padding"),
        ("oauth2.access_token", #""tök""#, "must be an OAuth 2 bearer token: letters, digits and - . _ ~ + /, then any = padding"),
    ])
    func aBadOAuth2ProofIsRefusedNamingItsField(field: String, json: String, reason: String) throws {
        let text = field == "oauth2" ? json : json.isEmpty ? "{}" : #"{"access_token":\#(json)}"#
        let value = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
        let problems = Self.problems(Self.body { $0["echo"] = nil; $0["oauth2"] = value })
        #expect(problems == [FieldProblem(field: field, reason: reason)])
    }

    @Test func reasonsNeverQuoteTheAccessToken() {
        let token = "s3cr3t-t0ken value"
        let problems = Self.problems(Self.body { $0["echo"] = nil; $0["oauth2"] = ["access_token": token] })
        #expect(problems.count == 1)
        #expect(!problems.description.contains("s3cr3t"))
        let event = try? IncomingEvent.parse(body: Self.body { $0["echo"] = nil; $0["oauth2"] = ["access_token": "s3cr3t-t0ken"] })
        #expect(event.map { !String(describing: $0).contains("s3cr3t") && !String(reflecting: $0).contains("s3cr3t") } == true)
    }

    @Test func reportsEveryBadFieldAtOnce() {
        let problems = Self.problems(Self.body {
            $0["id"] = nil
            $0["type"] = "nope"
            $0["user_id"] = " "
            $0["occurred_at"] = 5
        })
        #expect(problems.map(\.field) == ["id", "type", "user_id", "occurred_at"])
    }

    @Test func reasonsNeverQuoteTheAuthorizationHeader() {
        let problems = Self.problems(Self.body {
            $0["echo"] = ["service_provider": "https://a.example/v", "authorization": "Basic c2VjcmV0LXRva2Vu"]
        })
        #expect(problems.count == 1)
        #expect(!problems.description.contains("c2VjcmV0LXRva2Vu"))
    }

    @Test(arguments: [
        ([0xFF, 0xFE, 0x7B, 0x7D] as [UInt8], "the body is not valid UTF-8"),
        (Array("{\"id\": ".utf8), "the body is not valid JSON"),
        (Array("[1, 2]".utf8), "the body must be a JSON object, not an array"),
        (Array("\"text\"".utf8), "the body must be a JSON object, not a string"),
        (Array("".utf8), "the body is not valid JSON"),
    ])
    func refusesAMalformedBody(bytes: [UInt8], reason: String) {
        #expect(throws: EventParseError.malformed(reason)) { try IncomingEvent.parse(body: bytes) }
    }
}
