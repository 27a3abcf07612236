import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// EchoRelay's Standard Webhooks signing held against code nobody here wrote: the reference
/// Python package `standardwebhooks` verifies what EchoRelay signs and signs what EchoRelay
/// verifies, and both compute the same signature bytes. Needs `python3` with
/// `standardwebhooks` (`scripts/python-requirements.txt`); without them the tests fail and
/// say how to install them — they are never skipped.
@Suite struct StandardWebhooksCrossCheckTests {
    struct Case: Codable, Sendable {
        var name: String
        var id: String
        var timestamp: Int64
        /// The body, base64-encoded so every byte reaches Python untouched.
        var body: String
        var secrets: [String]
        /// A secret that signed nothing: verifying with it must fail.
        var stranger: String
        /// EchoRelay's `webhook-signature` value, for Python to verify; nil when Python only signs.
        var header: String?

        var bodyBytes: [UInt8] { Array(Data(base64Encoded: body) ?? Data()) }
    }

    struct PythonResult: Codable, Sendable {
        /// `Webhook(secret).sign(…)` for each secret of the case, in order.
        var signatures: [String]
        /// For each secret: nil when `Webhook(secret).verify` accepted EchoRelay's header, else its error.
        var verifiedWithEach: [String?]
        /// `verify` with the stranger secret: must be an error.
        var verifiedWithStranger: String?
        /// `verify` of EchoRelay's header over the body with one byte appended: must be an error.
        var verifiedTampered: String?
    }

    /// A key of 32 bytes, whose base64 ends in "=" (generated secrets are 24 bytes, unpadded).
    static let paddedSecret = "whsec_" + Data((0..<32).map { UInt8($0 * 7 + 1) }).base64EncodedString()

    static func cases(at timestamp: Int64) -> [Case] {
        func make(_ name: String, id: String = "msg_" + UUID().uuidString, _ body: String, secrets: [String]) -> Case {
            Case(name: name, id: id, timestamp: timestamp, body: Data(body.utf8).base64EncodedString(),
                 secrets: secrets, stranger: WebhookSecret.generate())
        }
        let delivery = #"{"type":"phone.changed","event_id":"evt_1","user_id":"42","sequence":3,"#
            + #""occurred_at":"2026-05-01T10:00:00Z","verified_at":"2026-05-01T10:00:01Z","#
            + #""data":{"phone_number":"+15555550100","previous_phone_number":"+15555550199"}}"#
        return [
            make("one secret", id: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", delivery, secrets: [WebhookSecret.generate()]),
            make("two secrets (rotation)", delivery, secrets: [WebhookSecret.generate(), WebhookSecret.generate()]),
            make("unicode body",
                 #"{"name":"Jörg Müller 🎉","note":"日本語 — “quoted” \u2028","raw":"é 👩‍👩‍👧 ﷽"}"#,
                 secrets: [WebhookSecret.generate(), paddedSecret]),
            make("empty body", "", secrets: [WebhookSecret.generate()]),
            make("white space and a trailing newline kept as sent", "{\n  \"a\" : [1, 2.50, null]\t}\r\n",
                 secrets: [paddedSecret]),
            make("large body", #"{"blob":""# + String(repeating: "x9/+=", count: 13_000) + #""}"#,
                 secrets: [WebhookSecret.generate()]),
        ]
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    @Test func standardwebhooksVerifiesWhatEchoRelaySigns() throws {
        var cases = Self.cases(at: Self.now())
        for index in cases.indices {
            let secrets = try cases[index].secrets.map { try WebhookSecret($0) }
            cases[index].header = StandardWebhooks.signatureHeaderValue(
                id: cases[index].id, timestamp: cases[index].timestamp, body: cases[index].bodyBytes, secrets: secrets
            )
        }
        let results = try Self.runStandardWebhooks(cases)
        try #require(results.count == cases.count)
        for (example, result) in zip(cases, results) {
            let header = try #require(example.header)
            #expect(header.split(separator: " ").count == example.secrets.count, "\(example.name)")
            #expect(result.verifiedWithEach == example.secrets.map { _ in nil }, "\(example.name): \(header)")
            #expect(result.verifiedWithStranger != nil, "\(example.name)")
            #expect(result.verifiedTampered != nil, "\(example.name)")
            // Not only accepted: the very same bytes, entry for entry.
            #expect(result.signatures.joined(separator: " ") == header, "\(example.name)")
        }
    }

    @Test func echoRelayVerifiesWhatStandardwebhooksSigns() throws {
        let cases = Self.cases(at: Self.now())
        let results = try Self.runStandardWebhooks(cases)
        try #require(results.count == cases.count)
        let now = Date()
        for (example, result) in zip(cases, results) {
            try #require(result.signatures.count == example.secrets.count, "\(example.name)")
            let header = result.signatures.joined(separator: " ")
            let secrets = try example.secrets.map { try WebhookSecret($0) }
            let stranger = try WebhookSecret(example.stranger)
            func verify(_ signatures: String, body: [UInt8], secrets: [WebhookSecret]) -> WebhookVerificationError? {
                do throws(WebhookVerificationError) {
                    try StandardWebhooks.verify(
                        id: example.id, timestamp: String(example.timestamp), signatures: signatures, body: body,
                        secrets: secrets, now: now
                    )
                    return nil
                } catch {
                    return error
                }
            }
            #expect(verify(header, body: example.bodyBytes, secrets: secrets) == nil, "\(example.name)")
            for (secret, signature) in zip(secrets, result.signatures) {
                // Each of Python's entries on its own, under its own secret, and its secret on the whole header.
                #expect(verify(signature, body: example.bodyBytes, secrets: [secret]) == nil, "\(example.name)")
                #expect(verify(header, body: example.bodyBytes, secrets: [secret]) == nil, "\(example.name)")
            }
            // Rotation, seen from the receiving side: an old secret and a new one, either signing.
            #expect(verify(header, body: example.bodyBytes, secrets: [stranger] + secrets) == nil, "\(example.name)")
            #expect(verify(header, body: example.bodyBytes, secrets: [stranger]) == .noMatchingSignature, "\(example.name)")
            #expect(verify(header, body: example.bodyBytes + [0x20], secrets: secrets) == .noMatchingSignature, "\(example.name)")
        }
    }

    /// The example from the Standard Webhooks specification and its reference libraries:
    /// a fixed secret, id, timestamp and body with a published signature. Python must still
    /// produce it (so the comparison above is with the reference, not a look-alike), and
    /// EchoRelay must produce and accept it.
    @Test func bothReproduceThePublishedExample() throws {
        let published = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        let example = Case(
            name: "published example", id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
            body: Data(#"{"test": 2432232314}"#.utf8).base64EncodedString(),
            secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], stranger: WebhookSecret.generate()
        )
        let python = try #require(try Self.runStandardWebhooks([example]).first)
        #expect(python.signatures == [published])

        let secret = try WebhookSecret(example.secrets[0])
        #expect(StandardWebhooks.signatureHeaderValue(
            id: example.id, timestamp: example.timestamp, body: example.bodyBytes, secrets: [secret]
        ) == published)
        #expect(throws: Never.self) {
            try StandardWebhooks.verify(
                id: example.id, timestamp: String(example.timestamp), signatures: published, body: example.bodyBytes,
                secrets: [secret], now: Date(timeIntervalSince1970: TimeInterval(example.timestamp))
            )
        }
    }

    /// Runs the `standardwebhooks` package over each case: signs with every secret and,
    /// when the case carries EchoRelay's header, verifies it (with each secret, with a
    /// stranger's secret, and over a tampered body).
    static func runStandardWebhooks(_ cases: [Case]) throws -> [PythonResult] {
        let script = """
            import base64, json, sys
            from datetime import datetime, timezone
            try:
                from standardwebhooks.webhooks import Webhook
            except ImportError:
                sys.exit(3)

            def verify(secret, body, case, header):
                headers = {"webhook-id": case["id"], "webhook-timestamp": str(case["timestamp"]),
                           "webhook-signature": header}
                try:
                    Webhook(secret).verify(body, headers, json_parse=False)
                    return None
                except Exception as error:
                    return "%s: %s" % (type(error).__name__, error)

            results = []
            for case in json.load(sys.stdin):
                body = base64.b64decode(case["body"])
                moment = datetime.fromtimestamp(case["timestamp"], tz=timezone.utc)
                signatures = [Webhook(s).sign(msg_id=case["id"], timestamp=moment, data=body.decode("utf-8"))
                              for s in case["secrets"]]
                header = case.get("header")
                result = {"signatures": signatures, "verifiedWithEach": [], "verifiedWithStranger": None,
                          "verifiedTampered": None}
                if header is not None:
                    result["verifiedWithEach"] = [verify(s, body, case, header) for s in case["secrets"]]
                    result["verifiedWithStranger"] = verify(case["stranger"], body, case, header)
                    result["verifiedTampered"] = verify(case["secrets"][0], body + b" ", case, header)
                results.append(result)
            json.dump(results, sys.stdout)
            """
        let output = try runPython(script, input: JSONEncoder().encode(cases), package: "standardwebhooks")
        return try JSONDecoder().decode([PythonResult].self, from: output)
    }

    /// Runs `python3 -c script` with `input` on standard input and returns its standard output.
    /// The script exits with status 3 when `package` cannot be imported.
    static func runPython(_ script: String, input: Data, package: String) throws -> Data {
        let run = try Spawned("/usr/bin/env", ["python3", "-c", script], input: input)
        run.waitUntilExit()

        let install = "`scripts/test` (it installs scripts/python-requirements.txt into .build/venv, first on PATH)"
        let errors = String(decoding: run.standardError, as: UTF8.self)
        switch run.status ?? -1 {
        case 0:
            return run.standardOutput
        case 127:
            throw CrossCheckSetupError("python3 was not found on PATH: install Python 3, then run \(install)")
        case 3:
            throw CrossCheckSetupError("the Python package \(package) is missing: run \(install)")
        default:
            throw CrossCheckSetupError("python3 failed (status \(run.status ?? -1)): \(errors)")
        }
    }
}
