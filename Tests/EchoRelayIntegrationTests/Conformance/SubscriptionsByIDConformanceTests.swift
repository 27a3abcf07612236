import EchoRelayCore
import Foundation
import Testing

/// The console names the subscriptions a page shows by reading just those, by id.
@Suite struct SubscriptionsByIDConformanceTests {
    @Test(arguments: StoreKind.all)
    func subscriptionsAreReadByIDLeavingOutDeletedAndUnknownOnes(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let kept = try await store.subscribe()
            let other = try await store.subscribe()
            let deleted = try await store.subscribe()
            #expect(try await store.deleteSubscription(id: deleted.id))
            let read = try await store.subscriptions(ids: [kept.id, deleted.id, "sub_unknown", other.id])
            #expect(Set(read.map(\.id)) == [kept.id, other.id])
            #expect(try await store.subscriptions(ids: []).isEmpty)
        }
    }
}
