import Crypto
import EchoRelayCore
import Foundation
import Testing

/// Recording received SETs, on both stores: once per (issuer, jti), an update for a user as an
/// event in the user's sequence, and the rest kept for support.
@Suite struct SecurityEventsConformanceTests {
    static let issuer = "https://transmitter.example.com"

    static func received(_ jti: String, _ disposition: ReceivedSecurityEvent.Disposition,
                         type: String = "https://schemas.openid.net/secevent/caep/event-type/credential-change") -> ReceivedSecurityEvent {
        ReceivedSecurityEvent(
            issuer: issuer, jti: jti, eventType: type, issuedAt: Date(timeIntervalSince1970: 1_800_000_000),
            subject: #"{"format":"opaque","id":"u-1"}"#, fingerprint: Array(SHA256.hash(data: Data(jti.utf8))),
            disposition: disposition
        )
    }

    static let occurred = Date(timeIntervalSince1970: 1_800_000_100)

    @Test(arguments: StoreKind.all)
    func anUpdateBecomesTheUsersNextEventOnceAndIsVerifiedByItsSignature(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await store.ingest("pushed-1", user: "u-1")
            let set = Self.received("jti-1", .update(.tokenRotated, user: .user("u-1"), phoneNumber: nil, occurredAt: Self.occurred))
            let receipt = try await store.receiveSecurityEvent(set)
            let event = IngestReceipt(id: set.eventID, sequence: 2, isDuplicate: false)
            #expect(receipt == .recorded(.event, event: event))
            #expect(set.eventID.hasPrefix("set:") && set.eventID.count == 36)
            #expect(EventFieldRules.eventIDProblem(set.eventID) == nil)

            // The same jti again (even another token) changes nothing.
            var again = set
            again.fingerprint = Array(repeating: 1, count: 32)
            #expect(try await store.receiveSecurityEvent(again) == .duplicate)
            #expect(try await store.ingest("pushed-2", user: "u-1").sequence == 3, "the duplicate took no sequence")

            let stored = try #require(try await store.event(id: set.eventID))
            #expect(stored.source == .set && stored.type == .tokenRotated && stored.sequence == 2 && stored.status == .pending)
            #expect(stored.occurredAt == Self.occurred)
            #expect(try await store.event(id: "pushed-1")?.source == .push)

            // Its work item is claimed like any other, and says where the event came from.
            let tasks = try await store.claimVerifications(owner: "w", limit: 10, lease: .seconds(60))
            #expect(tasks.map(\.eventID) == ["pushed-1", set.eventID, "pushed-2"])
            #expect(tasks.map(\.source) == [.push, .set, .push])
            #expect(tasks[1].echo == nil)

            let origin = try #require(try await store.securityEvent(eventID: set.eventID))
            #expect(origin.jti == "jti-1" && origin.issuer == Self.issuer && origin.disposition == .event)
            #expect(origin.eventType == set.eventType && origin.subject == set.subject && origin.eventID == set.eventID)
            #expect(try await store.securityEvent(eventID: "pushed-1") == nil)
        }
    }

    @Test(arguments: StoreKind.all)
    func aPhoneNumberSubjectNamesTheUserWhoseVerifiedNumberItIsOrIsUnmatched(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await store.ingest("p-1", user: "alice", type: .phoneChanged, phone: "+15550001111")
            try await store.ingest("p-2", user: "bob", type: .phoneChanged, phone: "+15550002222")
            try await store.ingest("p-3", user: "carol", type: .phoneChanged, phone: "+15550002222")
            try await store.verifyAll()

            let known = Self.received("jti-phone", .update(.phoneChanged, user: .phoneNumber("+15550001111"), phoneNumber: "+15550009999",
                                                           occurredAt: Self.occurred))
            guard case .recorded(.event, let event?) = try await store.receiveSecurityEvent(known) else {
                Issue.record("a number verified for one user names that user")
                return
            }
            let stored = try #require(try await store.event(id: event.id))
            #expect(stored.userID == "alice" && stored.sequence == 2 && stored.type == .phoneChanged)

            let shared = Self.received("jti-shared", .update(.accountDeactivated, user: .phoneNumber("+15550002222"), phoneNumber: nil,
                                                             occurredAt: Self.occurred))
            #expect(try await store.receiveSecurityEvent(shared) == .recorded(.unmatched, event: nil))
            let unknown = Self.received("jti-unknown", .update(.accountDeactivated, user: .phoneNumber("+15550003333"), phoneNumber: nil,
                                                               occurredAt: Self.occurred))
            #expect(try await store.receiveSecurityEvent(unknown) == .recorded(.unmatched, event: nil))

            let unmatched = try await store.securityEvents(disposition: .unmatched, before: nil, limit: 10)
            #expect(unmatched.map(\.jti) == ["jti-unknown", "jti-shared"])
            #expect(unmatched.map(\.note) == ["no user has this verified phone number", "several users have this verified phone number"])
            #expect(unmatched.allSatisfy { $0.eventID == nil })
            #expect(try await store.event(id: unknown.eventID) == nil)
        }
    }

    @Test(arguments: StoreKind.all)
    func everySetIsListedNewestFirstByDispositionAndPaged(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            _ = try await store.receiveSecurityEvent(Self.received("a", .verification(state: "state-1"),
                                                                    type: "https://schemas.openid.net/secevent/ssf/event-type/verification"))
            _ = try await store.receiveSecurityEvent(Self.received("b", .ignored("an event type EchoRelay does not relay"),
                                                                    type: "https://schemas.openid.net/secevent/caep/event-type/session-revoked"))
            _ = try await store.receiveSecurityEvent(Self.received("c", .unmatched("no subject")))
            _ = try await store.receiveSecurityEvent(Self.received("d", .update(.tokenRotated, user: .user("u-9"), phoneNumber: nil,
                                                                                occurredAt: Self.occurred)))
            let all = try await store.securityEvents(disposition: nil, before: nil, limit: 10)
            #expect(all.map(\.jti) == ["d", "c", "b", "a"])
            #expect(all.map(\.disposition) == [.event, .unmatched, .ignored, .verification])
            #expect(all[3].verificationState == "state-1" && all[3].note == nil)
            #expect(all[2].note == "an event type EchoRelay does not relay")
            #expect(all.allSatisfy { $0.issuedAt == Date(timeIntervalSince1970: 1_800_000_000) })
            #expect(all.allSatisfy { abs($0.receivedAt.timeIntervalSinceNow) < 60 })

            let firstPage = try await store.securityEvents(disposition: nil, before: nil, limit: 2)
            let secondPage = try await store.securityEvents(disposition: nil, before: firstPage.last?.number, limit: 2)
            #expect((firstPage + secondPage).map(\.jti) == ["d", "c", "b", "a"])
            #expect(try await store.securityEvents(disposition: .verification, before: nil, limit: 10).map(\.jti) == ["a"])
            // None but the update took a sequence or made an event.
            #expect(try await store.claimVerifications(owner: "w", limit: 10, lease: .seconds(60)).map(\.userID) == ["u-9"])
        }
    }

    /// A polled SET that failed a check is recorded refused once, and a copy that passes later
    /// takes its place; a refusal never replaces a SET recorded as accepted.
    @Test(arguments: StoreKind.all)
    func aRefusedSetIsRecordedOnceAndAPassingCopyTakesItsPlace(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let refused = RefusedSecurityEvent(issuer: Self.issuer, jti: "jti-r", fingerprint: Array(repeating: 7, count: 32),
                                               err: "invalid_key", description: "the signature does not verify")
            try await store.recordRefusedSecurityEvent(refused)
            try await store.recordRefusedSecurityEvent(refused)
            let listed = try await store.securityEvents(disposition: .refused, before: nil, limit: 10)
            #expect(listed.map(\.jti) == ["jti-r"])
            #expect(listed.first?.note == "invalid_key: the signature does not verify")
            #expect(listed.first?.eventType == "")

            let passing = Self.received("jti-r", .update(.accountDeactivated, user: .user("u-r"), phoneNumber: nil, occurredAt: Self.occurred,
                                                         reason: "session_revoked"))
            let receipt = try await store.receiveSecurityEvent(passing)
            #expect(receipt == .recorded(.event, event: IngestReceipt(id: passing.eventID, sequence: 1, isDuplicate: false)))
            #expect(try await store.securityEvents(disposition: .refused, before: nil, limit: 10).isEmpty)
            #expect(try await store.event(id: passing.eventID)?.sessionReason == "session_revoked")
            try await store.recordRefusedSecurityEvent(refused)
            #expect(try await store.securityEvents(disposition: nil, before: nil, limit: 10).map(\.disposition) == [.event])
        }
    }

    /// The registered stream is kept whole and replaced; `verify` finds the newest
    /// verification event recorded after a point.
    @Test(arguments: StoreKind.all)
    func theStreamIsKeptAndVerificationEventsAreFoundAfterAPoint(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            #expect(try await store.securityEventStream() == nil)
            let created = Date(timeIntervalSince1970: 1_800_000_000)
            var stream = SecurityEventStream(streamID: "s-1", delivery: .poll, endpointURL: "https://t.example/poll/s-1",
                                             configuration: #"{"stream_id":"s-1"}"#, status: .enabled, createdAt: created, updatedAt: created)
            try await store.saveSecurityEventStream(stream)
            stream.status = .paused
            stream.statusReason = "maintenance"
            stream.verification = .init(state: "abc", requestedAt: created, outcome: .passed, elapsed: .milliseconds(42))
            try await store.saveSecurityEventStream(stream)
            let kept = try #require(try await store.securityEventStream())
            #expect(kept.streamID == "s-1" && kept.delivery == .poll && kept.status == .paused && kept.statusReason == "maintenance")
            #expect(kept.verification == stream.verification)
            #expect(kept.createdAt == created)

            #expect(try await store.newestSecurityEventNumber() == nil)
            _ = try await store.receiveSecurityEvent(Self.received("v-1", .verification(state: "old")))
            let before = try await store.newestSecurityEventNumber()
            #expect(try await store.verificationEvent(after: before) == nil)
            _ = try await store.receiveSecurityEvent(Self.received("v-2", .verification(state: "abc")))
            #expect(try await store.verificationEvent(after: before)?.state == "abc")
        }
    }
}
