import Crypto
import EchoRelayCore
import Foundation
import Testing
import TestSupport

/// What every store keeps for OAuth 2: the access token from ingest to the claim and no longer
/// than the outcome, the event's path, and each confirmed token's `exp` and whether a later
/// rotation superseded it (the deactivation rule's facts).
@Suite struct OAuth2ConformanceTests {
    static func ingestOAuth2(_ store: any EchoRelayStore, _ id: String, user: String, type: EventType = .tokenRotated,
                             token: String) async throws {
        _ = try await store.ingest(IncomingEvent(
            id: id, type: type, userID: user, occurredAt: Date(timeIntervalSince1970: 1_800_000_000), phoneNumber: nil,
            echo: nil, oauth2: OAuth2Credentials(accessToken: Secret(token)), fingerprint: Array(SHA256.hash(data: Data(id.utf8)))
        ))
    }

    /// Claims the one due verification and records `outcome` for it.
    static func finish(_ store: any EchoRelayStore, _ outcome: (VerificationTask) -> VerificationOutcome) async throws -> VerificationTask {
        let task = try #require(try await store.claimVerifications(owner: "w", limit: 1, lease: .seconds(60)).first)
        #expect(try await store.finishVerification(task, owner: "w", outcome: outcome(task)))
        return task
    }

    static func confirmed(_ task: VerificationTask, expiresAt: Date?) -> VerificationOutcome {
        OAuth2OutcomeRules.confirmed(task: task, tokenHash: task.oauth2!.tokenHash, expiresAt: expiresAt)
    }

    @Test(arguments: StoreKind.all)
    func anAccessTokenIsClaimedWithItsEventAndErasedWithTheOutcome(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await Self.ingestOAuth2(store, "e1", user: "a", token: "token-a-1")
            #expect(try await store.event(id: "e1")?.path == .oauth2)
            let task = try await Self.finish(store) { task in
                #expect(task.path == .oauth2 && task.echo == nil && task.oauth2?.accessToken.revealed == "token-a-1")
                return Self.confirmed(task, expiresAt: nil)
            }
            #expect(task.path == .oauth2)
            let event = try #require(try await store.event(id: "e1"))
            #expect(event.status == .verified && event.path == .oauth2, "the path stays with the outcome")

            // Re-verified with a fresh token, or with echo headers: the path follows the proof.
            try await Self.ingestOAuth2(store, "e2", user: "a", token: "token-a-2")
            _ = try await Self.finish(store) { _ in .unverifiable(.providerUnavailable) }
            try await store.reverify(eventID: "e2", proof: .oauth2(OAuth2Credentials(accessToken: Secret("token-a-3"))),
                                     actor: .environmentAdmin, reason: "idp back")
            _ = try await Self.finish(store) { task in
                #expect(task.oauth2?.accessToken.revealed == "token-a-3" && task.path == .oauth2)
                return .unverifiable(.providerUnavailable)
            }
            try await store.reverify(eventID: "e2", proof: .echo(EchoCredentials(serviceProvider: "https://api.example/v", authorization: Secret("OAuth x"))),
                                     actor: .environmentAdmin, reason: "echo after all")
            #expect(try await store.event(id: "e2")?.path == .echo)
            let echoTask = try #require(try await store.claimVerifications(owner: "w", limit: 1, lease: .seconds(60)).first)
            #expect(echoTask.path == .echo && echoTask.oauth2 == nil && echoTask.echo != nil)
        }
    }

    @Test(arguments: StoreKind.all)
    func aConfirmedTokenKeepsItsExpiryAndIsSupersededOnlyByALaterRotation(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let expiry = Date(timeIntervalSince1970: 1_900_000_000)
            let old = OAuth2Credentials(accessToken: Secret("old-token")), new = OAuth2Credentials(accessToken: Secret("new-token"))
            #expect(try await store.confirmedToken(userID: "a", tokenHash: old.tokenHash) == nil, "never confirmed")

            try await Self.ingestOAuth2(store, "e1", user: "a", token: "old-token")
            _ = try await Self.finish(store) { Self.confirmed($0, expiresAt: expiry) }
            let first = try await store.confirmedToken(userID: "a", tokenHash: old.tokenHash)
            #expect(first?.superseded == false)
            #expect(abs((first?.expiresAt ?? .distantPast).timeIntervalSince(expiry)) < 0.001)
            #expect(try await store.confirmedToken(userID: "b", tokenHash: old.tokenHash) == nil, "another user's")

            // A phone change confirming another token supersedes nothing; a rotation does.
            try await Self.ingestOAuth2(store, "e2", user: "a", type: .phoneChanged, token: "new-token")
            _ = try await Self.finish(store) { Self.confirmed($0, expiresAt: nil) }
            #expect(try await store.confirmedToken(userID: "a", tokenHash: old.tokenHash)?.superseded == false)
            try await Self.ingestOAuth2(store, "e3", user: "a", token: "new-token")
            _ = try await Self.finish(store) { Self.confirmed($0, expiresAt: expiry) }
            #expect(try await store.confirmedToken(userID: "a", tokenHash: old.tokenHash)?.superseded == true)
            #expect(try await store.confirmedToken(userID: "a", tokenHash: new.tokenHash)?.superseded == false)

            // The old token confirmed again by a later event is the newest once more.
            try await Self.ingestOAuth2(store, "e4", user: "a", type: .accountDeactivated, token: "old-token")
            _ = try await Self.finish(store) { Self.confirmed($0, expiresAt: expiry) }
            #expect(try await store.confirmedToken(userID: "a", tokenHash: old.tokenHash)?.superseded == false)
            #expect(try await store.confirmedToken(userID: "a", tokenHash: new.tokenHash)?.superseded == false,
                    "only a rotation supersedes")
            // Another user's rotations supersede nothing of this user's.
            try await Self.ingestOAuth2(store, "e5", user: "b", token: "b-token")
            _ = try await Self.finish(store) { Self.confirmed($0, expiresAt: nil) }
            #expect(try await store.confirmedToken(userID: "a", tokenHash: old.tokenHash)?.superseded == false)
        }
    }
}
