import EchoRelayCore
import EchoRelayPostgres
import Foundation
import PostgresNIO
import Testing
import TestSupport

@testable import EchoRelaySQLite

/// One database whose store can be opened again with another sealer, as a restart with
/// another ECHORELAY_SECRET_KEY would, and whose raw secret columns can be read, to see what
/// the database holds.
final class SealingHarness: @unchecked Sendable {
    enum Backing {
        case postgres(PostgresClient)
        case sqlite(path: String)
    }

    let backing: Backing
    /// The open embedded store: one at a time, as its file lock wants. Used by one test, in sequence.
    private var sqlite: SQLiteEventStore?

    private init(_ backing: Backing) {
        self.backing = backing
    }

    static func with(_ kind: StoreKind, _ body: @Sendable (SealingHarness) async throws -> Void) async throws {
        switch kind {
        case .postgres, .postgresByUser:
            try await TestDatabase.withFresh { database in
                try await database.withClient { client in
                    try await StoreHarness.migrate(client, for: kind)
                    try await body(SealingHarness(.postgres(client)))
                }
            }
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-sealing-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let harness = SealingHarness(.sqlite(path: folder.appendingPathComponent("echorelay.sqlite").path))
            do {
                try await body(harness)
                try await harness.sqlite?.close()
            } catch {
                try? await harness.sqlite?.close()
                throw error
            }
        }
    }

    /// The store with `sealer` (nil: none), replacing the previous one.
    func store(sealer: SecretSealer?) async throws -> any EchoRelayStore {
        switch backing {
        case .postgres(let client):
            return PostgresEventStore(client: client, logger: TestLogger.quiet, sealer: sealer)
        case .sqlite(let path):
            try await sqlite?.close()
            sqlite = nil
            // A child process that another test forks in the same moment holds a copy of the
            // lock's descriptor until it execs, so the file may still read as locked briefly.
            var opened: SQLiteEventStore?
            let deadline = ContinuousClock.now + .seconds(10)
            while opened == nil {
                do {
                    opened = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet, sealer: sealer)
                } catch SQLiteStoreError.locked where ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let store = opened!
            try await store.migrate()
            sqlite = store
            return store
        }
    }

    /// What the row holds in `secret` and `previous_secret`.
    func rawSecrets(_ id: String) async throws -> (secret: String, previous: String?) {
        switch backing {
        case .postgres(let client):
            let rows = try await client.query("SELECT secret, previous_secret FROM subscriptions WHERE id = \(id)", logger: TestLogger.quiet)
            for try await row in rows.decode((String, String?).self) { return row }
        case .sqlite:
            let store = try #require(sqlite)
            if let row = try await store.session.read({ db in
                try await db.row("SELECT secret, previous_secret FROM subscriptions WHERE id = ?1", [id])
            }) {
                return (try row.string(0), try row.optionalString(1))
            }
        }
        throw TestSetupError("no subscription \(id)")
    }
}

/// Subscription secrets sealed at rest with ECHORELAY_SECRET_KEY, on every store.
@Suite struct SealedSecretsConformanceTests {
    @Test(arguments: StoreKind.all)
    func aSealedSecretIsNotInItsColumnAndStillSigns(kind: StoreKind) async throws {
        try await SealingHarness.with(kind) { harness in
            let key = SecretSealer.generateKey()
            let sealer = try SecretSealer(keys: key)
            let store = try await harness.store(sealer: sealer)
            let first = WebhookSecret.generate(), second = WebhookSecret.generate()
            let subscription = try await store.createSubscription(
                SubscriptionFields(url: "https://hooks.example.com/a", eventTypes: EventType.allCases), ownerTokenID: nil, secret: first
            )
            let raw = try await harness.rawSecrets(subscription.id)
            #expect(raw.secret != first && !raw.secret.contains(first) && !raw.secret.contains(key))
            #expect(SecretSealer.keyID(ofSealed: raw.secret) == sealer.sealingKeyID)
            #expect(try sealer.open(raw.secret, subscriptionID: subscription.id) == first)

            try await store.ingest("e1", user: "a")
            try await store.verifyAll()
            let claimed = try await store.claimAllDeliveries()
            #expect(claimed.map { $0.secrets.map(\.revealed) } == [[first]])
            for task in claimed { try await store.finish(task) }

            // Rotated: the new secret is sealed too, and both sign during the overlap.
            _ = try #require(try await store.rotateSubscriptionSecret(id: subscription.id, newSecret: second, overlap: .seconds(3600)))
            let rotated = try await harness.rawSecrets(subscription.id)
            #expect(SecretSealer.isSealed(rotated.secret) && !rotated.secret.contains(second))
            #expect(rotated.previous == raw.secret, "the previous secret moves as stored")
            try await store.ingest("e2", user: "a")
            try await store.verifyAll()
            let again = try await store.claimAllDeliveries()
            #expect(again.map { $0.secrets.map(\.revealed) } == [[second, first]])
            for task in again { try await store.finish(task) }

            // Opened without its key: a clear error naming the key, never the secret.
            let other = try await harness.store(sealer: try SecretSealer(keys: SecretSealer.generateKey()))
            try await other.ingest("e3", user: "a")
            try await other.verifyAll()
            let error = await #expect(throws: SecretSealerError.unknownKey(id: sealer.sealingKeyID, subscriptionID: subscription.id)) {
                try await other.claimAllDeliveries()
            }
            #expect(error.map { !$0.description.contains(second) && !$0.description.contains(key) } == true)
            let plain = try await harness.store(sealer: nil)
            await #expect(throws: SecretSealerError.notConfigured) { try await plain.resealSubscriptionSecrets() }
        }
    }

    @Test(arguments: StoreKind.all)
    func resealSealsPlainSecretsAndMovesSealedOnesToTheFirstKey(kind: StoreKind) async throws {
        try await SealingHarness.with(kind) { harness in
            let oldKey = SecretSealer.generateKey(), newKey = SecretSealer.generateKey()
            let old = try SecretSealer(keys: oldKey), new = try SecretSealer(keys: newKey)
            let plainSecret = WebhookSecret.generate(), sealedSecret = WebhookSecret.generate(), rotatedSecret = WebhookSecret.generate()

            // Written before encryption: stored as is, and read as is once a key is set.
            let plainStore = try await harness.store(sealer: nil)
            let plain = try await plainStore.createSubscription(
                SubscriptionFields(url: "https://hooks.example.com/plain", eventTypes: [.tokenRotated]), ownerTokenID: nil, secret: plainSecret
            )
            #expect(try await harness.rawSecrets(plain.id).secret == plainSecret)
            let oldStore = try await harness.store(sealer: old)
            let sealed = try await oldStore.createSubscription(
                SubscriptionFields(url: "https://hooks.example.com/sealed", eventTypes: [.tokenRotated]), ownerTokenID: nil, secret: sealedSecret
            )
            _ = try await oldStore.rotateSubscriptionSecret(id: sealed.id, newSecret: rotatedSecret, overlap: .seconds(3600))

            // A key that opens neither: nothing changes.
            let stranger = try await harness.store(sealer: try SecretSealer(keys: SecretSealer.generateKey()))
            let before = try await harness.rawSecrets(sealed.id)
            await #expect(throws: SecretSealerError.unknownKey(id: old.sealingKeyID, subscriptionID: sealed.id)) {
                try await stranger.resealSubscriptionSecrets()
            }
            #expect(try await harness.rawSecrets(plain.id).secret == plainSecret)
            #expect(try await harness.rawSecrets(sealed.id) == before)

            // The new key first, the old after it: reseal moves everything to the new key.
            let both = try await harness.store(sealer: try SecretSealer(keys: "\(newKey),\(oldKey)"))
            #expect(try await both.resealSubscriptionSecrets() == 2)
            for id in [plain.id, sealed.id] {
                let raw = try await harness.rawSecrets(id)
                #expect(SecretSealer.keyID(ofSealed: raw.secret) == new.sealingKeyID)
                #expect(raw.previous.map { SecretSealer.keyID(ofSealed: $0) == new.sealingKeyID } ?? true)
            }
            #expect(try await both.resealSubscriptionSecrets() == 0, "nothing left to reseal")

            // The old key removed: every secret still signs.
            let newStore = try await harness.store(sealer: new)
            try await newStore.ingest("e1", user: "a")
            try await newStore.verifyAll()
            let tasks = try await newStore.claimAllDeliveries()
            let secrets = Dictionary(uniqueKeysWithValues: tasks.map { ($0.subscriptionID, $0.secrets.map(\.revealed)) })
            #expect(secrets == [plain.id: [plainSecret], sealed.id: [rotatedSecret, sealedSecret]])
        }
    }
}
