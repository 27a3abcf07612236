import EchoRelayCore
import Foundation
import Testing

@Suite struct StandardWebhooksTests {
    // The example of the Standard Webhooks reference libraries' tests (and of the
    // `standardwebhooks` package on PyPI, which produces the same signature).
    let secret = try! WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    let id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    let timestamp: Int64 = 1_614_265_330
    let body = Array(#"{"test": 2432232314}"#.utf8)
    var signedAt: Date { Date(timeIntervalSince1970: Double(timestamp)) }

    @Test func signsThePublishedExample() {
        #expect(StandardWebhooks.signature(id: id, timestamp: timestamp, body: body, secret: secret)
            == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func verifiesThePublishedExample() throws {
        try StandardWebhooks.verify(
            id: id, timestamp: String(timestamp), signatures: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            body: body, secrets: [secret], now: signedAt
        )
    }

    @Test func acceptsAnyMatchingEntryAmongSeveral() throws {
        let good = StandardWebhooks.signature(id: id, timestamp: timestamp, body: body, secret: secret)
        try StandardWebhooks.verify(
            id: id, timestamp: String(timestamp), signatures: "v1,Zm9v v1a,ignored \(good)",
            body: body, secrets: [secret], now: signedAt
        )
    }

    @Test func acceptsAnyActiveSecret() throws {
        let other = try WebhookSecret(WebhookSecret.generate())
        let signature = StandardWebhooks.signature(id: id, timestamp: timestamp, body: body, secret: secret)
        try StandardWebhooks.verify(
            id: id, timestamp: String(timestamp), signatures: signature, body: body, secrets: [other, secret],
            now: signedAt
        )
    }

    @Test func refusesATamperedBody() {
        let signature = StandardWebhooks.signature(id: id, timestamp: timestamp, body: body, secret: secret)
        #expect(throws: WebhookVerificationError.noMatchingSignature) {
            try StandardWebhooks.verify(
                id: id, timestamp: String(timestamp), signatures: signature, body: Array(#"{"test": 1}"#.utf8),
                secrets: [secret], now: signedAt
            )
        }
    }

    @Test func refusesAnotherSecret() throws {
        let other = try WebhookSecret(WebhookSecret.generate())
        let signature = StandardWebhooks.signature(id: id, timestamp: timestamp, body: body, secret: other)
        #expect(throws: WebhookVerificationError.noMatchingSignature) {
            try StandardWebhooks.verify(
                id: id, timestamp: String(timestamp), signatures: signature, body: body, secrets: [secret], now: signedAt
            )
        }
    }

    @Test func refusesOnlyOtherVersions() {
        let signature = StandardWebhooks.signature(id: id, timestamp: timestamp, body: body, secret: secret)
        #expect(throws: WebhookVerificationError.noMatchingSignature) {
            try StandardWebhooks.verify(
                id: id, timestamp: String(timestamp), signatures: "v2," + signature.dropFirst(3), body: body,
                secrets: [secret], now: signedAt
            )
        }
    }

    @Test(arguments: [-301.0, 301.0])
    func refusesATimestampMoreThanFiveMinutesAway(offset: Double) {
        let signature = StandardWebhooks.signature(id: id, timestamp: timestamp, body: body, secret: secret)
        #expect(throws: WebhookVerificationError.timestampOutOfTolerance) {
            try StandardWebhooks.verify(
                id: id, timestamp: String(timestamp), signatures: signature, body: body, secrets: [secret],
                now: signedAt.addingTimeInterval(offset)
            )
        }
    }

    @Test(arguments: [-299.0, 299.0])
    func acceptsATimestampWithinFiveMinutes(offset: Double) throws {
        let signature = StandardWebhooks.signature(id: id, timestamp: timestamp, body: body, secret: secret)
        try StandardWebhooks.verify(
            id: id, timestamp: String(timestamp), signatures: signature, body: body, secrets: [secret],
            now: signedAt.addingTimeInterval(offset)
        )
    }

    @Test func namesTheMissingHeader() {
        #expect(throws: WebhookVerificationError.missingHeader("webhook-id")) {
            try StandardWebhooks.verify(id: nil, timestamp: "1", signatures: "v1,x", body: body, secrets: [secret], now: signedAt)
        }
        #expect(throws: WebhookVerificationError.missingHeader("webhook-timestamp")) {
            try StandardWebhooks.verify(id: "a", timestamp: nil, signatures: "v1,x", body: body, secrets: [secret], now: signedAt)
        }
        #expect(throws: WebhookVerificationError.missingHeader("webhook-signature")) {
            try StandardWebhooks.verify(id: "a", timestamp: "1", signatures: "", body: body, secrets: [secret], now: signedAt)
        }
        #expect(throws: WebhookVerificationError.invalidTimestamp) {
            try StandardWebhooks.verify(id: "a", timestamp: "1e9", signatures: "v1,x", body: body, secrets: [secret], now: signedAt)
        }
    }

    @Test func parsesSecretsStrictly() {
        #expect(throws: WebhookSecretError.missingPrefix) { try WebhookSecret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") }
        #expect(throws: WebhookSecretError.invalidBase64) { try WebhookSecret("whsec_not base64!") }
        #expect(throws: WebhookSecretError.invalidBase64) { try WebhookSecret("whsec_") }
        #expect(throws: Never.self) { try WebhookSecret(WebhookSecret.generate()) }
    }

    @Test func headerValueCarriesOneEntryPerSecret() throws {
        let other = try WebhookSecret(WebhookSecret.generate())
        let header = StandardWebhooks.signatureHeaderValue(id: id, timestamp: timestamp, body: body, secrets: [secret, other])
        let entries = header.split(separator: " ")
        #expect(entries.count == 2)
        #expect(entries.allSatisfy { $0.hasPrefix("v1,") })
    }
}
