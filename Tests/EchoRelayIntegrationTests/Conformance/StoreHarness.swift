import Crypto
import EchoRelayCore
import EchoRelayPostgres
import EchoRelaySQLite
import Foundation
import Logging
import PostgresNIO
import TestSupport
import Testing

/// The stores the conformance suite runs against. Every behaviour test takes one as its
/// argument, so a behaviour is proven on each store by the same code.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case postgres, sqlite
    /// PostgreSQL with the per-user tables hash-partitioned by user id (`PartitionByUser`).
    case postgresByUser = "postgres partitioned by user"

    var testDescription: String { rawValue }

    /// The stores in the suite.
    static let all: [StoreKind] = [.postgres, .sqlite, .postgresByUser]
}

/// A fresh, migrated store of one kind for one test.
enum StoreHarness {
    static func withStore(_ kind: StoreKind, _ body: @Sendable (any EchoRelayStore) async throws -> Void) async throws {
        switch kind {
        case .postgres, .postgresByUser:
            try await TestDatabase.withFresh { database in
                try await database.withClient { client in
                    try await migrate(client, for: kind)
                    // A wait well past the seconds a test process on 2 cores can stall while the
                    // rest of the suite computes: these tests are about what is stored, not the 503.
                    try await body(PostgresEventStore(client: client, logger: TestLogger.quiet, ingestWait: .seconds(60)))
                }
            }
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-conformance-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let store = try await SQLiteEventStore.open(path: folder.appendingPathComponent("echorelay.sqlite").path, logger: TestLogger.quiet)
            do {
                _ = try await store.migrate()
                try await body(store)
                try await store.close()
            } catch {
                try? await store.close()
                throw error
            }
        }
    }
}

extension StoreHarness {
    /// Migrates a fresh PostgreSQL database, and partitions it by user for `.postgresByUser`.
    static func migrate(_ client: PostgresClient, for kind: StoreKind) async throws {
        _ = try await Migrator(client: client, logger: TestLogger.quiet).migrate()
        if kind == .postgresByUser { try await client.query(PostgresQuery(unsafeSQL: PartitionByUser.sql)) }
    }
}

/// Short ways to put a store in a given state through its own interface.
extension EventStore {
    @discardableResult
    func ingest(_ id: String, user: String, type: EventType = .tokenRotated, phone: String? = nil, body: String = "") async throws -> IngestReceipt {
        try await ingest(IncomingEvent.example(id, user: user, type: type, phone: phone, body: body))
    }

    /// Claims every due verification and finishes each with `outcome` (verified by default).
    @discardableResult
    func verifyAll(_ outcome: (VerificationTask) -> VerificationOutcome = { task in
        VerificationOutcome(status: .verified, reason: .providerConfirmed, providerUserID: task.userID,
                            providerPhoneNumber: task.pushedPhoneNumber, confirmedTokenHash: Array(SHA256.hash(data: Data(task.eventID.utf8))))
    }) async throws -> [VerificationTask] {
        let tasks = try await claimVerifications(owner: "conformance", limit: 100, lease: .seconds(60))
        for task in tasks {
            #expect(try await finishVerification(task, owner: "conformance", outcome: outcome(task)))
        }
        return tasks
    }
}

extension SubscriptionStore {
    func subscribe(types: [EventType] = EventType.allCases, ordered: Bool = true, owner: String? = nil) async throws -> Subscription {
        try await createSubscription(
            SubscriptionFields(url: "https://hooks.example.com/\(UUID().uuidString)", eventTypes: types, ordered: ordered),
            ownerTokenID: owner, secret: WebhookSecret.generate()
        )
    }
}

extension DeliveryStore {
    func claimAllDeliveries(cap: Int = 100, answered: [Int64] = []) async throws -> [DeliveryTask] {
        try await claimDeliveries(owner: "conformance", limit: 100, lease: .seconds(60), perSubscriptionCap: cap, answered: answered)
    }

    /// Claims and delivers until nothing is due, and returns every task in claim order;
    /// `eachClaim` sees each claim's tasks before they are finished.
    @discardableResult
    func deliverAll(eachClaim: ([DeliveryTask]) -> Void = { _ in }) async throws -> [DeliveryTask] {
        var all: [DeliveryTask] = []
        while case let tasks = try await claimAllDeliveries(), !tasks.isEmpty {
            eachClaim(tasks)
            for task in tasks { try await finish(task) }
            all += tasks
        }
        return all
    }

    func finish(_ task: DeliveryTask, _ next: DeliveryNext = .delivered, status: Int? = 200) async throws {
        let attempt = DeliveryAttempt(startedAt: Date(), duration: .milliseconds(12), statusCode: status,
                                      errorKind: status.map { (200..<300).contains($0) ? nil : .status } ?? .timeout,
                                      error: nil, responseHead: "ok")
        #expect(try await recordDeliveryAttempt(task, owner: "conformance", attempt: attempt, next: next, disableAfter: .seconds(86_400)))
    }
}

let supportActor = Principal(tokenID: nil, name: "conformance support", role: .support)

extension IncomingEvent {
    /// An echo event for `user`, its fingerprint from the id, the user and `body`.
    static func example(_ id: String, user: String, type: EventType = .tokenRotated, phone: String? = nil, body: String = "") -> IncomingEvent {
        IncomingEvent(
            id: id, type: type, userID: user, occurredAt: Date(timeIntervalSince1970: 1_800_000_000), phoneNumber: phone,
            echo: EchoCredentials(serviceProvider: "https://api.example.com/1.1/sdk/account.json",
                                  authorization: Secret("OAuth oauth_token=\"t-\(id)\"")),
            fingerprint: Array(SHA256.hash(data: Data((id + "|" + user + "|" + body).utf8)))
        )
    }
}
