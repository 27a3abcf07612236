import EchoRelayCore
import EchoRelayStandIns
import Foundation
import PostgresNIO
import Synchronization
import Testing
import TestSupport

/// Deliveries signed with subscription secrets sealed by ECHORELAY_SECRET_KEY, checked by the
/// subscriber's own Standard Webhooks code, across the key rotation procedure of the README.
@Suite struct SealedSecretDeliveryTests {
    static func rawSecret(_ id: String, in database: TestDatabase) async throws -> String {
        try await database.withClient { client in
            let rows = try await client.query("SELECT secret FROM subscriptions WHERE id = \(id)", logger: TestLogger.quiet)
            for try await secret in rows.decode(String.self) { return secret }
            throw TestSetupError("no subscription \(id)")
        }
    }

    /// Pushes a verified event for a new user and returns the delivery the subscriber got.
    static func deliverOne(_ f: EchoFixture, user: String, subscriber: StandInSubscriber) async throws -> StandInSubscriber.ReceivedDelivery {
        let event = try await f.pushVerified("token.rotated", userID: user, session: try f.session(user))
        let deliveries = try await f.finalDeliveries(of: try #require(event["id"] as? String), count: 1)
        #expect(deliveries.first?["status"] as? String == "delivered")
        return try #require(subscriber.deliveries.last { $0.object?["user_id"]?.stringValue == user })
    }

    @Test func deliveriesVerifyWithASealedSecretBeforeDuringAndAfterAKeyRotation() async throws {
        let oldKey = SecretSealer.generateKey(), newKey = SecretSealer.generateKey()
        let oldID = try SecretSealer(keys: oldKey).sealingKeyID, newID = try SecretSealer(keys: newKey).sealingKeyID
        try await TestDatabase.withFresh { database in
            try await StandInSubscriber().run { subscriber in
                // Sealed with the old key; the subscriber verifies with the secret it was given.
                let subscriptionID = Mutex<String?>(nil)
                try await EchoFixture.run(secretKey: oldKey, database: database) { f in
                    let subscription = try await f.subscribe(url: subscriber.url())
                    let id = try #require(subscription["id"] as? String), secret = try #require(subscription["secret"] as? String)
                    subscriber.setSecrets([secret])
                    let raw = try await Self.rawSecret(id, in: database)
                    #expect(raw.hasPrefix("v1:\(oldID):") && !raw.contains(secret))
                    #expect(try await Self.deliverOne(f, user: "s1", subscriber: subscriber).signatureValid)
                    subscriptionID.withLock { $0 = id }
                }
                let id = try #require(subscriptionID.withLock { $0 })

                // The new key first, the old after it; restart; reseal, as an operator does.
                let both = "\(newKey),\(oldKey)"
                try await EchoFixture.run(secretKey: both, database: database) { f in
                    #expect(try await Self.deliverOne(f, user: "s2", subscriber: subscriber).signatureValid, "old key still opens")
                    let reseal = try await ChildProcess.run(["reseal"], environment: [
                        "ECHORELAY_DATABASE_URL": database.url, "ECHORELAY_SECRET_KEY": both, "ECHORELAY_LOG_LEVEL": "error",
                    ])
                    #expect(reseal.status == 0, "\(reseal.stderr)")
                    #expect(reseal.stdout.contains("resealed 1 subscription with key \(newID)"))
                    #expect(!reseal.stdout.contains(newKey) && !reseal.stderr.contains(newKey) && !reseal.stderr.contains(oldKey))
                    #expect(try await Self.rawSecret(id, in: database).hasPrefix("v1:\(newID):"))
                    #expect(try await Self.deliverOne(f, user: "s3", subscriber: subscriber).signatureValid, "after reseal")
                }

                // The old key removed: deliveries still verify.
                try await EchoFixture.run(secretKey: newKey, database: database) { f in
                    let delivered = try await Self.deliverOne(f, user: "s4", subscriber: subscriber)
                    #expect(delivered.signatureValid)
                }
            }
        }
    }

    @Test func resealRefusesAMissingOrMalformedKeyWithoutShowingIt() async throws {
        try await TestDatabase.withFresh { database in
            let environment = ["ECHORELAY_DATABASE_URL": database.url, "ECHORELAY_LOG_LEVEL": "error"]
            let missing = try await ChildProcess.run(["reseal"], environment: environment)
            #expect(missing.status != 0 && missing.stderr.contains("ECHORELAY_SECRET_KEY is not set"))
            let bad = "c2hvcnQta2V5"
            let malformed = try await ChildProcess.run(["reseal"], environment: environment.merging(["ECHORELAY_SECRET_KEY": bad]) { $1 })
            #expect(malformed.status != 0 && malformed.stderr.contains("not the base64 of 32 bytes") && !malformed.stderr.contains(bad))
            let key = try await ChildProcess.run(["secret-key"])
            #expect(key.status == 0)
            #expect(Data(base64Encoded: key.stdout.trimmingCharacters(in: .whitespacesAndNewlines))?.count == 32)
        }
    }
}
