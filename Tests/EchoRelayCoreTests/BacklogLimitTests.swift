import EchoRelayCore
import Testing

/// The ingest gate by backlog and its `Retry-After` estimate, on readings given by hand
/// (the readings themselves are tested on both stores in the conformance suite).
@Suite struct BacklogLimitTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant {
        start + .milliseconds(Int(seconds * 1000))
    }

    @Test func retryAfterIsTheTimeToDrainBelowTheLimitWithinOneToSixtySeconds() {
        // 1,500 waiting, 1,000 allowed: 501 must finish before one more fits.
        #expect(BacklogLimit.retryAfter(backlog: 1_500, limit: 1_000, drainPerSecond: 50) == 11)  // 10.02 s, rounded up
        #expect(BacklogLimit.retryAfter(backlog: 1_500, limit: 1_000, drainPerSecond: 501) == 1)
        #expect(BacklogLimit.retryAfter(backlog: 1_000, limit: 1_000, drainPerSecond: 5_000) == 1, "never less than a second")
        #expect(BacklogLimit.retryAfter(backlog: 100_000, limit: 1_000, drainPerSecond: 10) == 60, "never more than a minute")
        #expect(BacklogLimit.retryAfter(backlog: 1_001, limit: 1_000, drainPerSecond: nil) == 60, "not seen draining: the longest")
        #expect(BacklogLimit.retryAfter(backlog: 1_001, limit: 1_000, drainPerSecond: 0) == 60)
    }

    @Test func theGateClosesAtTheLimitOnceAndOpensBelowItOnce() {
        let gate = BacklogLimit(limit: 3)
        #expect(gate.record(BacklogSample(count: 2, arrivals: 2), admittedBefore: 0, at: at(0)) == nil)
        #expect(gate.record(BacklogSample(count: 3, arrivals: 3), admittedBefore: 0, at: at(0.5)) == .closed(backlog: 3, retryAfter: 60))
        #expect(gate.admit() == 60, "at the limit: one more would pass it; nothing has drained yet")
        #expect(gate.record(BacklogSample(count: 4, arrivals: 4), admittedBefore: 0, at: at(1)) == nil, "closed already: no second report")
        #expect(gate.admit() != nil)
        #expect(gate.record(BacklogSample(count: 2, arrivals: 4), admittedBefore: 0, at: at(1.5)) == .opened(backlog: 2))
        #expect(gate.admit() == nil, "below the limit: let in")
        #expect(gate.record(BacklogSample(count: 1, arrivals: 5), admittedBefore: 1, at: at(2)) == nil, "open already")
        #expect(gate.backlog == 1)
    }

    /// Between readings, the events this process lets in count on top of the last reading:
    /// one process alone does not pass the limit however fast events come.
    @Test func eventsLetInSinceTheLastReadingCountUntilAReadingIncludesThem() {
        let gate = BacklogLimit(limit: 3)
        #expect(gate.admit() == nil)
        #expect(gate.admit() == nil)
        let before = gate.readingStarts()  // a reading starts: it will see these two
        #expect(gate.admit() == nil, "2 + 0 read so far: a third fits")
        #expect(gate.admit() != nil, "a fourth would pass the limit before any reading says so")
        _ = gate.record(BacklogSample(count: 2, arrivals: 2), admittedBefore: before, at: at(0))
        #expect(gate.admit() != nil, "the reading has the first two; the third, let in after it started, still counts")
        _ = gate.record(BacklogSample(count: 2, arrivals: 3), admittedBefore: gate.readingStarts(), at: at(0.5))
        #expect(gate.admit() == nil, "the third was never stored (a failed request): once read, there is room again")
        #expect(gate.admit() != nil)
    }

    @Test func theDrainRateCountsWhatLeftBetweenReadingsArrivalsIncluded() throws {
        let gate = BacklogLimit(limit: 100)
        _ = gate.record(BacklogSample(count: 150, arrivals: 1_000), admittedBefore: 0, at: at(0))
        #expect(gate.drainPerSecond == nil)
        // 150 waiting + 30 arrived − 140 waiting now = 40 finished in 2 s.
        _ = gate.record(BacklogSample(count: 140, arrivals: 1_030), admittedBefore: 0, at: at(2))
        #expect(gate.drainPerSecond == 20)
        // 41 past the limit at 20 a second: 3 s (2.05, rounded up).
        #expect(gate.admit() == 3)
        // A reading at the cap is a floor, not a count: it says nothing of the drain.
        _ = gate.record(BacklogSample(count: gate.countCap, arrivals: 1_500), admittedBefore: 0, at: at(3))
        _ = gate.record(BacklogSample(count: gate.countCap, arrivals: 1_500), admittedBefore: 0, at: at(4))
        #expect(gate.drainPerSecond == 20)
        // Nor does an empty backlog, which drains only as fast as events arrive.
        _ = gate.record(BacklogSample(count: 0, arrivals: 1_600), admittedBefore: 0, at: at(5))
        _ = gate.record(BacklogSample(count: 0, arrivals: 1_601), admittedBefore: 0, at: at(6))
        #expect(gate.drainPerSecond == 20)
    }

    @Test func theDrainRateIsSmoothedByTimeAMeasurementOverOneHalfLifeMovingItHalfway() throws {
        var rate = DrainRate(halfLife: .seconds(4))
        rate.add(drained: 400, over: .seconds(1))
        #expect(rate.perSecond == 400, "the first measurement is taken as it is")
        rate.add(drained: 800, over: .seconds(4))  // 200 a second for one half-life
        #expect(try #require(rate.perSecond) == 300)
        // Two readings over two seconds weigh as one over four.
        var split = DrainRate(halfLife: .seconds(4))
        split.add(drained: 400, over: .seconds(1))
        split.add(drained: 400, over: .seconds(2))
        split.add(drained: 400, over: .seconds(2))
        #expect(abs(try #require(split.perSecond) - 300) < 1e-9)
        // A stall drives it toward zero, never below.
        rate.add(drained: -50, over: .seconds(40))
        #expect(try #require(rate.perSecond) >= 0)
        #expect(try #require(rate.perSecond) < 1)
    }
}

/// When the backlog reading refreshes the queue's statistics.
@Suite struct QueueStatisticsTests {
    @Test func aBurstIsRefreshedPastTheFloorThenAtEachGrowthAndADrainedQueueStartsOver() {
        var statistics = QueueStatistics(floor: 1_000, growth: 4)
        let refreshed = [0, 500, 999, 1_000, 1_500, 3_999, 4_000, 9_000, 16_000, 20_000, 3_000, 100, 900, 1_200, 2_000]
            .filter { statistics.shouldRefresh(backlog: $0) }
        #expect(refreshed == [1_000, 4_000, 16_000, 1_200])
    }
}
