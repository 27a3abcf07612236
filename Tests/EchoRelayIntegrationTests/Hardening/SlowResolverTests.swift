import EchoRelayCore
import EchoRelayQueue
import EchoRelayPostgres
import EchoRelayStandIns
import EchoRelayWorkers
import Foundation
import Hummingbird
import Synchronization
import Testing
import TestSupport

/// Subscribers' names are looked up on a bounded set of threads, one look-up per name at a
/// time, so a subscriber whose DNS hangs delays nobody else. The blocking look-up is a stand-in
/// that holds the names it is told to until the test lets them go (the machine has no DNS
/// server to make slow); the threads, the sharing and the delivery worker are the real ones.
@Suite struct SlowResolverTests {
    static let loopback = IPAddress.v4(0x7F00_0001)

    /// A blocking look-up that holds `held` names until `release()`, and counts what it is asked.
    final class HeldResolver: Sendable {
        private let state = Mutex((released: false, asked: [String](), inside: 0, mostInside: 0))
        let held: @Sendable (String) -> Bool

        init(holding held: @escaping @Sendable (String) -> Bool) { self.held = held }

        var asked: [String] { state.withLock { $0.asked } }
        var mostInside: Int { state.withLock { $0.mostInside } }
        var inside: Int { state.withLock { $0.inside } }
        func release() { state.withLock { $0.released = true } }

        func lookUp(_ name: String) -> AddressResolver.LookUp {
            state.withLock { state in
                state.asked.append(name)
                state.inside += 1
                state.mostInside = max(state.mostInside, state.inside)
            }
            defer { state.withLock { $0.inside -= 1 } }
            if held(name) {
                while !state.withLock({ $0.released }) { usleep(2_000) }
            }
            return .addresses([SlowResolverTests.loopback])
        }
    }

    /// Every name in `names` looked up at once, each by a caller of its own.
    static func lookingUp(_ names: [String], on lookUps: NameLookups) -> Task<[AddressResolver.LookUp], Never> {
        Task {
            await withTaskGroup(of: AddressResolver.LookUp.self) { group in
                for name in names { group.addTask { await lookUps.lookUp(name, timeout: .seconds(60)) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
    }

    @Test func concurrentLookUpsOfOneNameShareOneLookUp() async throws {
        let resolver = HeldResolver { _ in true }
        let lookUps = NameLookups(threads: 4, resolve: resolver.lookUp)
        let answers = Self.lookingUp(Array(repeating: "hooks.example", count: 30), on: lookUps)
        try await waitUntil(within: .seconds(10), "the first look-up") { !resolver.asked.isEmpty }
        try await Task.sleep(for: .milliseconds(200))  // the other 29 callers ask meanwhile
        resolver.release()
        let all = await answers.value
        #expect(all == Array(repeating: .addresses([Self.loopback]), count: 30))
        #expect(resolver.asked == ["hooks.example"], "30 callers, one look-up")
        try await lookUps.shutdown()
    }

    @Test func noMoreNamesAreLookedUpAtOnceThanThereAreThreads() async throws {
        let resolver = HeldResolver { _ in true }
        let lookUps = NameLookups(threads: 3, resolve: resolver.lookUp)
        let answers = Self.lookingUp((0..<10).map { "n\($0).example" }, on: lookUps)
        try await waitUntil(within: .seconds(10), "three look-ups under way") { resolver.inside == 3 }
        try await Task.sleep(for: .milliseconds(300))  // time for a fourth thread, were there one
        #expect(resolver.inside == 3)
        resolver.release()
        let all = await answers.value
        #expect(all.count == 10 && all.allSatisfy { $0 == .addresses([Self.loopback]) })
        #expect(resolver.mostInside == 3, "at most the pool's threads at once: \(resolver.mostInside)")
        try await lookUps.shutdown()
    }

    @Test func aNameThatHangsDoesNotHoldUpOtherNames() async throws {
        let resolver = HeldResolver { $0 == "slow.example" }
        let lookUps = NameLookups(threads: 2, resolve: resolver.lookUp)
        let slow = Self.lookingUp(Array(repeating: "slow.example", count: 20), on: lookUps)
        try await waitUntil(within: .seconds(10), "the slow look-up") { resolver.inside == 1 }
        for index in 0..<5 {
            // Each answered while the slow one still hangs: a caller stuck behind it would time out.
            #expect(await lookUps.lookUp("fast\(index).example", timeout: .seconds(20)) == .addresses([Self.loopback]))
        }
        #expect(resolver.inside == 1, "the slow look-up still hangs")
        resolver.release()
        #expect(await slow.value.count == 20)
        try await lookUps.shutdown()
    }

    /// End to end through the delivery worker: a subscriber whose name hangs has every one of
    /// its deliveries waiting on it, and another subscriber's deliveries all arrive meanwhile.
    /// Once the name answers, the first subscriber's arrive too.
    @Test func aSubscriberWhoseDNSHangsDoesNotDelayAnothersDeliveries() async throws {
        let events = 40
        let resolver = HeldResolver { $0 == "slow.example" }
        let lookUps = NameLookups(threads: 2, resolve: resolver.lookUp)
        let received = Received()
        try await HandOffTests.withStore { store, _ in
            try await LoopbackServer.run(Self.counting(received)) { port in
                for name in ["slow", "fast"] {
                    _ = try await store.createSubscription(
                        SubscriptionFields(url: "http://\(name).example:\(port)/hooks/\(name)", eventTypes: EventType.allCases, ordered: false),
                        ownerTokenID: nil, secret: WebhookSecret.generate())
                }
                for index in 0..<events { try await store.ingest("e\(index)", user: "u\(index)") }
                try await store.verifyAll()
                var configuration = DeliveryWorkerConfiguration()
                configuration.privateSubscribers = try PrivateSubscriberAllowList(parsing: "slow.example,fast.example")
                configuration.nameLookups = lookUps
                let worker = Task {
                    try await DeliveryWorker(store: store, wake: WakeSignal(), configuration: configuration, owner: "worker",
                                             logger: TestLogger.quiet).run()
                }
                defer { worker.cancel() }
                try await waitUntil(within: .seconds(8), "every delivery to the subscriber whose name answers") {
                    received.count("fast") == events
                }
                #expect(received.count("slow") == 0, "nothing reached the subscriber whose name hangs")
                #expect(resolver.asked.filter { $0 == "slow.example" }.count == 1, "its waiting deliveries share one look-up")
                resolver.release()
                try await waitUntil(within: .seconds(30), "every delivery to the other, once its name answers") {
                    received.count("slow") == events
                }
            }
        }
        try await lookUps.shutdown()
    }

    /// The webhooks each subscriber (`/hooks/NAME`) received.
    final class Received: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        func count(_ name: String) -> Int { counts.withLock { $0[name] ?? 0 } }
        func add(_ name: String) { counts.withLock { $0[name, default: 0] += 1 } }
    }

    static func counting(_ received: Received) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/hooks/:name") { _, context -> Response in
            received.add(context.parameters.get("name") ?? "")
            return Response(status: .noContent)
        }
        return router
    }
}
