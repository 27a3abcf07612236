import EchoRelayCore
import Testing

@Suite struct BoundedCacheTests {
    @Test func aValueIsMadeOnceAndKept() {
        let cache = BoundedCache<String, Int>(capacity: 4)
        var made = 0
        for _ in 0..<3 {
            #expect(cache.value(for: "a") { made += 1; return 1 } == 1)
        }
        #expect(made == 1)
    }

    @Test func aFailureIsNotKept() {
        struct Refused: Error {}
        let cache = BoundedCache<String, Int>(capacity: 4)
        #expect(throws: Refused.self) { try cache.value(for: "a") { () throws(Refused) -> Int in throw Refused() } }
        #expect(cache.value(for: "a") == nil)
    }

    @Test func itNeverHoldsMoreThanItsCapacity() {
        let cache = BoundedCache<Int, Int>(capacity: 3)
        for key in 0..<10 { cache.set(key, for: key) }
        #expect(cache.count == 3)
        #expect(cache.value(for: 9) == 9, "the newest entry is always there")
    }

    @Test func anEntryExpiresAtItsTime() {
        let cache = BoundedCache<String, Int>(capacity: 4)
        let start = ContinuousClock.now
        cache.set(1, for: "a", expires: start + .seconds(5))
        #expect(cache.value(for: "a", now: start + .seconds(4)) == 1)
        #expect(cache.value(for: "a", now: start + .seconds(5)) == nil)
    }

    @Test func expiredEntriesGoFirstWhenFull() {
        let cache = BoundedCache<String, Int>(capacity: 2)
        let start = ContinuousClock.now
        cache.set(1, for: "lasting", expires: start + .seconds(60))
        cache.set(2, for: "brief", expires: start + .seconds(1))
        cache.set(3, for: "new", expires: start + .seconds(60), now: start + .seconds(2))
        #expect(cache.value(for: "lasting", now: start + .seconds(2)) == 1)
        #expect(cache.value(for: "new", now: start + .seconds(2)) == 3)
        #expect(cache.count == 2)
    }
}
