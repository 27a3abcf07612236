import EchoRelayCore
import Foundation
import Testing

/// Support's list of events across users (`GET /v1/events`), on both stores.
@Suite struct RecentEventsConformanceTests {
    /// Five events of three users: verified, rejected, one left pending; one subscription
    /// for token rotations only.
    static func prepare(_ store: any EchoRelayStore) async throws -> Subscription {
        let subscription = try await store.subscribe(types: [.tokenRotated])
        try await store.ingest("e1", user: "u1")
        try await store.ingest("e2", user: "u2", type: .accountDeactivated)
        try await store.ingest("e3", user: "u3", type: .accountDeactivated)
        try await store.ingest("e4", user: "u1")
        try await store.verifyAll { task in
            switch task.eventID {
            case "e2": .rejected(.unknownToken)
            case "e3": .rejected(.accountActive)
            default: VerificationOutcome(status: .verified, reason: .providerConfirmed, providerUserID: task.userID)
            }
        }
        try await store.ingest("e5", user: "u2")  // pending
        return subscription
    }

    static func ids(_ store: any EchoRelayStore, _ query: RecentEventsQuery) async throws -> [String] {
        try await store.recentEvents(query).map(\.event.id)
    }

    @Test(arguments: StoreKind.all)
    func everyUsersEventsComeNewestReceivedFirstAndEachFilterHolds(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await Self.prepare(store)
            let all = try await store.recentEvents(RecentEventsQuery())
            #expect(all.map(\.event.id) == ["e5", "e4", "e3", "e2", "e1"])
            #expect(all.map(\.event.userID) == ["u2", "u1", "u3", "u2", "u1"])
            #expect(all.first { $0.event.id == "e4" }?.deliveries.bySubscription.map(\.subscriptionID) == [subscription.id])

            #expect(try await Self.ids(store, RecentEventsQuery(types: [.accountDeactivated])) == ["e3", "e2"])
            #expect(try await Self.ids(store, RecentEventsQuery(statuses: [.rejected])) == ["e3", "e2"])
            #expect(try await Self.ids(store, RecentEventsQuery(statuses: [.pending, .rejected])) == ["e5", "e3", "e2"])
            #expect(try await Self.ids(store, RecentEventsQuery(reasons: [.unknownToken])) == ["e2"])
            #expect(try await Self.ids(store, RecentEventsQuery(types: [.accountDeactivated], statuses: [.rejected],
                                                                reasons: [.accountActive])) == ["e3"])
            #expect(try await Self.ids(store, RecentEventsQuery(subscriptionID: subscription.id)) == ["e4", "e1"])
            #expect(try await Self.ids(store, RecentEventsQuery(subscriptionID: "sub_none")).isEmpty)
            let e3 = try #require(all.first { $0.event.id == "e3" }).event
            #expect(try await Self.ids(store, RecentEventsQuery(since: e3.receivedAt)).contains("e3"), "since is inclusive")
            #expect(try await !Self.ids(store, RecentEventsQuery(until: e3.receivedAt)).contains("e3"), "until is exclusive")
        }
    }

    /// Paged one at a time with each page's cursor, every event comes once, in order: also
    /// those received in the same instant, which the cursor tells apart by id.
    @Test(arguments: StoreKind.all)
    func pagingByCursorVisitsEveryEventOnceInOrder(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            _ = try await Self.prepare(store)
            let expected = try await Self.ids(store, RecentEventsQuery())
            var seen: [String] = []
            var cursor: RecentEventsCursor?
            repeat {
                let page = try await store.recentEvents(RecentEventsQuery(before: cursor, limit: 2))
                seen += page.map(\.event.id)
                cursor = page.count == 2 ? RecentEventsCursor(after: try #require(page.last).event) : nil
                if let cursor { #expect(RecentEventsCursor(text: cursor.text) == cursor) }
            } while cursor != nil
            #expect(seen == expected)

            // Ties: a cursor at another event's exact receipt time, but a higher id, still
            // lists that event (ids order events received together).
            let e3 = try #require(try await store.recentEvents(RecentEventsQuery()).first { $0.event.id == "e3" }).event
            var tie = RecentEventsCursor(after: e3)
            tie.eventID = "e3z"
            #expect(try await Self.ids(store, RecentEventsQuery(before: tie)).first == "e3")
        }
    }

    @Test func aCursorIsReadBackOnlyInTheFormItWasGiven() {
        #expect(RecentEventsCursor(text: "1795527126000001~evt_01HZX3") ==
                RecentEventsCursor(receivedAtMicroseconds: 1_795_527_126_000_001, eventID: "evt_01HZX3"))
        #expect(RecentEventsCursor(text: "1795527126000001~evt~x")?.eventID == "evt~x")
        for bad in ["", "12", "~evt", "12~", "-5~evt", "x~evt", "12 ~evt"] {
            #expect(RecentEventsCursor(text: bad) == nil, "\(bad)")
        }
    }
}
