import EchoRelayCore
import EchoRelayPostgres
import EchoRelaySQLite
import Foundation
import Testing
import TestSupport

/// One suite of store behaviours, run against every store through the `EchoRelayStore`
/// interface alone. A behaviour that differs by design is tested per store, and says so.
@Suite struct StoreConformanceTests {
    // MARK: Ingest

    @Test(arguments: StoreKind.all)
    func ingestGivesGaplessPerUserSequencesAndIsIdempotent(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            #expect(try await store.ingest("e1", user: "a").sequence == 1)
            #expect(try await store.ingest("e2", user: "b").sequence == 1)
            #expect(try await store.ingest("e3", user: "a").sequence == 2)
            let again = try await store.ingest("e1", user: "a")
            #expect(again == IngestReceipt(id: "e1", sequence: 1, isDuplicate: true))
            await #expect(throws: IngestError.conflict(id: "e1")) { try await store.ingest("e1", user: "a", body: "other") }
            #expect(try await store.ingest("e4", user: "a").sequence == 3, "a duplicate or a conflict takes no sequence number")

            let stored = try #require(try await store.event(id: "e3"))
            #expect(stored.userID == "a" && stored.sequence == 2 && stored.status == .pending && stored.type == .tokenRotated)
            #expect(try await store.event(id: "missing") == nil)
        }
    }

    /// Many ingests at once, as under load, where the PostgreSQL store shares commits
    /// between them: retries and conflicting bodies mixed in, several events per user.
    @Test(arguments: StoreKind.all)
    func concurrentIngestsKeepSequencesGaplessAndAnswerRetriesAndConflicts(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await store.ingest("early", user: "u0")  // stored before: its retry comes in the middle of the crowd
            // 120 new events over 6 users, each id sent twice with the same body, 10 ids a third time with another body.
            var sends: [(id: String, user: String, body: String)] = [("early", "u0", "")]
            for n in 0..<120 {
                let (id, user) = ("c\(n)", "u\(n % 6)")
                sends += [(id, user, ""), (id, user, "")]
                if n % 12 == 0 { sends.append((id, user, "other")) }
            }
            sends.shuffle()
            let answers = await withTaskGroup(of: (String, String, Result<IngestReceipt, any Error>).self) { group in
                for send in sends {
                    group.addTask {
                        (send.id, send.body, await Result(catching: { try await store.ingest(send.id, user: send.user, body: send.body) }))
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }

            var firstReceipts: [String: IngestReceipt] = [:]
            var conflicts = 0
            for (id, body, result) in answers {
                switch result {
                case .success(let receipt) where !receipt.isDuplicate:
                    #expect(firstReceipts.updateValue(receipt, forKey: id) == nil, "\(id) was stored twice")
                case .success:
                    break
                case .failure(let error as IngestError):
                    #expect(error == .conflict(id: id))
                    conflicts += 1
                case .failure(let error):
                    Issue.record("\(id) (\(body.isEmpty ? "first body" : "other body")) failed: \(error)")
                }
            }
            // Each pair of sends with one body: one stored, one answered as its retry with the same sequence.
            for (id, body, result) in answers {
                guard case .success(let receipt) = result, receipt.isDuplicate else { continue }
                #expect(firstReceipts[id]?.sequence == receipt.sequence || id == "early", "\(id) (\(body)) retry got another sequence")
            }
            #expect(firstReceipts.count == 120, "every new id stored exactly once")
            #expect(conflicts >= 10, "a body that differs from the stored one is a conflict")
            for user in 0..<6 {
                let sequences = firstReceipts.filter { Int($0.key.dropFirst())! % 6 == user }.map(\.value.sequence).sorted()
                let first: Int64 = user == 0 ? 2 : 1
                #expect(sequences == Array(first..<(first + 20)), "user u\(user): sequences gapless and unique")
            }
            let items = try await store.claimVerifications(owner: "conformance", limit: 500, lease: .seconds(60))
            #expect(items.count == 121, "one verification item per stored event")
        }
    }

    // MARK: Verification work items

    @Test(arguments: StoreKind.all)
    func aClaimedVerificationIsLeasedUntilFinishedRetriedOrReleased(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await store.ingest("e1", user: "a")
            let first = try await store.claimVerifications(owner: "w1", limit: 10, lease: .seconds(60))
            #expect(first.map(\.eventID) == ["e1"])
            #expect(first.first?.attempts == 1)
            #expect(first.first?.echo?.authorization.revealed == "OAuth oauth_token=\"t-e1\"")
            #expect(try await store.claimVerifications(owner: "w2", limit: 10, lease: .seconds(60)).isEmpty, "leased to w1")

            // Another owner cannot finish it; a retry makes it due later with its try count.
            let claimed = try #require(first.first)
            #expect(try await !store.finishVerification(claimed, owner: "w2", outcome: .rejected(.unknownToken)))
            // Two seconds is long enough that "not due yet" holds on a loaded machine.
            #expect(try await store.retryVerification(claimed, owner: "w1", after: .seconds(2)))
            #expect(try await store.claimVerifications(owner: "w2", limit: 10, lease: .seconds(60)).isEmpty, "not due yet")
            var second: [VerificationTask] = []
            let deadline = ContinuousClock.now + .seconds(15)
            while second.isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
                second = try await store.claimVerifications(owner: "w2", limit: 10, lease: .seconds(60))
            }
            let retried = try #require(second.first, "due again after the delay")
            #expect(retried.attempts == 2)

            // Released: due at once, the try not counted.
            try await store.releaseVerification(retried, owner: "w2")
            let third = try await store.claimVerifications(owner: "w3", limit: 10, lease: .seconds(60))
            #expect(third.first?.attempts == 2)
        }
    }

    @Test(arguments: StoreKind.all)
    func anExpiredLeaseLetsAnotherWorkerTakeTheItem(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await store.ingest("e1", user: "a")
            let crashed = try await store.claimVerifications(owner: "crashed", limit: 10, lease: .milliseconds(300))
            #expect(crashed.count == 1)
            try await Task.sleep(for: .milliseconds(400))
            let taken = try await store.claimVerifications(owner: "alive", limit: 10, lease: .seconds(60))
            #expect(taken.map(\.eventID) == ["e1"])
            let lost = try #require(crashed.first)
            let held = try #require(taken.first)
            #expect(try await !store.finishVerification(lost, owner: "crashed", outcome: .rejected(.unknownToken)),
                    "the crashed owner lost its lease")
            #expect(try await store.finishVerification(held, owner: "alive", outcome: .rejected(.unknownToken)))
        }
    }

    @Test(arguments: StoreKind.all)
    func aFinalOutcomeErasesTheEchoAndUpdatesTheUserByTheHighestSequence(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await store.ingest("e1", user: "a", type: .phoneChanged, phone: "+15555550100")
            try await store.ingest("e2", user: "a", type: .phoneChanged, phone: "+15555550101")
            let tasks = try await store.claimVerifications(owner: "w", limit: 10, lease: .seconds(60))
            let byID = Dictionary(uniqueKeysWithValues: tasks.map { ($0.eventID, $0) })
            let verified = { (task: VerificationTask) in
                VerificationOutcome(status: .verified, reason: .providerConfirmed, providerUserID: "a",
                                    providerPhoneNumber: task.pushedPhoneNumber, confirmedTokenHash: [1, 2, 3])
            }
            // The newer event is verified first; the older one, verified late, must not win.
            #expect(try await store.finishVerification(byID["e2"]!, owner: "w", outcome: verified(byID["e2"]!)))
            #expect(try await store.finishVerification(byID["e1"]!, owner: "w", outcome: verified(byID["e1"]!)))
            let user = try #require(try await store.user(id: "a"))
            #expect(user.state == .active && user.phoneNumber == "+15555550101" && user.lastSequence == 2)
            #expect(try await store.isTokenConfirmed(userID: "a", tokenHash: [1, 2, 3]))
            #expect(try await !store.isTokenConfirmed(userID: "b", tokenHash: [1, 2, 3]))
            let event = try #require(try await store.event(id: "e1"))
            #expect(event.status == .verified && event.reason == .providerConfirmed && event.providerPhoneNumber == "+15555550100")
            #expect(event.decidedAt != nil && event.verifiedAt != nil)
            #expect(try await store.claimVerifications(owner: "w", limit: 10, lease: .seconds(60)).isEmpty, "the work items are gone")
            #expect(try await store.user(id: "nobody") == nil)
        }
    }

    // MARK: Subscriptions

    @Test(arguments: StoreKind.all)
    func subscriptionsAreOwnedPagedUpdatedRotatedAndDeleted(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let tokenA = try await store.createAccessToken(name: "app a", role: .app).record.id
            let tokenB = try await store.createAccessToken(name: "app b", role: .app).record.id
            var created: [Subscription] = []
            for index in 0..<5 { created.append(try await store.subscribe(owner: index < 3 ? tokenA : tokenB)) }
            #expect(created.allSatisfy { $0.enabled && $0.ordered })

            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await store.subscriptions(owner: nil, cursor: cursor, limit: 2)
                seen += page.subscriptions.map(\.id)
                cursor = page.nextCursor
            } while cursor != nil
            #expect(seen == created.map(\.id))
            #expect(try await store.subscriptions(owner: tokenA, cursor: nil, limit: 10).subscriptions.map(\.id)
                == created.prefix(3).map(\.id))
            await #expect(throws: SubscriptionCursorError.self) {
                _ = try await store.subscriptions(owner: nil, cursor: "not-a-cursor", limit: 10)
            }

            let id = created[0].id
            let updated = try #require(try await store.updateSubscription(id: id, SubscriptionFields(eventTypes: [.phoneChanged], description: .some("billing"))))
            #expect(updated.eventTypes == [.phoneChanged] && updated.description == "billing" && updated.url == created[0].url)
            let disabled = try #require(try await store.setSubscriptionEnabled(id: id, false, reason: "maintenance"))
            #expect(!disabled.enabled && disabled.disabledReason == "maintenance")
            #expect(try await store.setSubscriptionEnabled(id: id, true, reason: nil)?.enabled == true)
            #expect(try await store.rotateSubscriptionSecret(id: id, newSecret: WebhookSecret.generate(), overlap: .seconds(60)) != nil)

            #expect(try await store.deleteSubscription(id: id))
            #expect(try await store.subscription(id: id) == nil)
            #expect(try await !store.deleteSubscription(id: id))
            #expect(try await store.updateSubscription(id: "sub_missing", SubscriptionFields(ordered: false)) == nil)
        }
    }

    // MARK: Deliveries

    @Test(arguments: StoreKind.all)
    func aVerifiedEventFansOutToEnabledSubscriptionsThatWantItsTypeOnly(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let wanted = try await store.subscribe(types: [.tokenRotated])
            _ = try await store.subscribe(types: [.phoneChanged])
            let off = try await store.subscribe(types: [.tokenRotated])
            _ = try await store.setSubscriptionEnabled(id: off.id, false, reason: "off")
            try await store.ingest("e1", user: "a")
            try await store.ingest("e2", user: "a")
            try await store.verifyAll { task in
                task.eventID == "e2" ? .rejected(.unknownToken)
                    : VerificationOutcome(status: .verified, reason: .providerConfirmed, providerUserID: "a")
            }
            let tasks = try await store.claimAllDeliveries()
            #expect(tasks.map(\.subscriptionID) == [wanted.id])
            let task = try #require(tasks.first)
            #expect(task.eventID == "e1" && task.userID == "a" && task.sequence == 1 && task.attempts == 1 && task.type == .tokenRotated)
            #expect(task.webhookID == WebhookID.make(eventID: "e1", subscriptionID: wanted.id), "one rule on both stores")
            #expect(task.replay == nil)
            #expect(task.url == wanted.url && task.secrets.count == 1)
            let body = try JSONValue.parse(task.body())
            #expect(body.objectValue?["event_id"] == .string("e1"))
            #expect(try await store.deliveries(eventID: "e2").isEmpty, "a rejected event is delivered to nobody")
        }
    }

    @Test(arguments: StoreKind.all)
    func anOrderedSubscriptionGetsAUsersEventsOneAtATimeInSequence(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let ordered = try await store.subscribe(ordered: true)
            let unordered = try await store.subscribe(ordered: false)
            for index in 1...3 { try await store.ingest("a\(index)", user: "a") }
            try await store.ingest("b1", user: "b")
            try await store.verifyAll()

            let first = try await store.claimAllDeliveries()
            let orderedFirst = first.filter { $0.subscriptionID == ordered.id }.map(\.eventID).sorted()
            #expect(orderedFirst == ["a1", "b1"], "one per user at a time")
            #expect(first.filter { $0.subscriptionID == unordered.id }.count == 4, "unordered: all at once")

            // A retry keeps the next one back; delivery releases it.
            let a1 = try #require(first.first { $0.subscriptionID == ordered.id && $0.eventID == "a1" })
            try await store.finish(a1, .retry(after: .milliseconds(1)), status: 500)
            try await Task.sleep(for: .milliseconds(20))
            let retried = try await store.claimAllDeliveries()
            #expect(retried.map(\.eventID) == ["a1"])
            #expect(retried.first?.attempts == 2)
            try await store.finish(try #require(retried.first))
            #expect(try await store.claimAllDeliveries().map(\.eventID) == ["a2"])
        }
    }

    @Test(arguments: StoreKind.all)
    func anEarlierEventAwaitingVerificationHoldsBackOnlyItsUser(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            _ = try await store.subscribe(ordered: true)
            try await store.ingest("a1", user: "a")
            try await store.ingest("a2", user: "a")
            try await store.ingest("b1", user: "b")
            let tasks = try await store.claimVerifications(owner: "w", limit: 10, lease: .seconds(60))
            for task in tasks where task.eventID != "a1" {
                _ = try await store.finishVerification(task, owner: "w", outcome: VerificationOutcome(status: .verified, reason: .providerConfirmed))
            }
            #expect(try await store.claimAllDeliveries().map(\.eventID) == ["b1"])
            let a1 = try #require(tasks.first { $0.eventID == "a1" })
            _ = try await store.finishVerification(a1, owner: "w", outcome: .unverifiable(.providerUnavailable))
            #expect(try await store.claimAllDeliveries().map(\.eventID) == ["a2"], "an unverifiable event has nothing to deliver")
        }
    }

    @Test(arguments: StoreKind.all)
    func aSubscriptionGetsNoMoreThanItsCapInFlight(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            _ = try await store.subscribe(ordered: false)
            for index in 1...5 { try await store.ingest("e\(index)", user: "u\(index)") }
            try await store.verifyAll()
            #expect(try await store.claimAllDeliveries(cap: 2).count == 2)
            #expect(try await store.claimAllDeliveries(cap: 2).isEmpty, "two in flight already")
        }
    }

    /// A delivery whose webhook was answered keeps its lease until its attempt is recorded,
    /// but its slot goes to the next delivery at once.
    @Test(arguments: StoreKind.all)
    func anAnsweredDeliveryLeavesItsSlotToTheNextClaimBeforeItsAttemptIsRecorded(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            _ = try await store.subscribe(ordered: false)
            for index in 1...5 { try await store.ingest("e\(index)", user: "u\(index)") }
            try await store.verifyAll()
            let first = try await store.claimAllDeliveries(cap: 2)
            #expect(first.count == 2)
            let answered = try #require(first.first)
            let next = try await store.claimAllDeliveries(cap: 2, answered: [answered.deliveryID])
            #expect(next.count == 1, "one slot is free: the other claimed delivery is still in flight")
            #expect(!first.map(\.deliveryID).contains(try #require(next.first).deliveryID), "a leased delivery is not claimed again")
            #expect(try await store.claimAllDeliveries(cap: 2, answered: [answered.deliveryID]).isEmpty, "both slots taken again")
            try await store.finish(answered)
            #expect(try await store.claimAllDeliveries(cap: 2, answered: [answered.deliveryID]).isEmpty,
                    "a recorded delivery counts neither way")
        }
    }

    @Test(arguments: StoreKind.all)
    func everyAttemptIsRecordedAndTheLastTryDeadLetters(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe()
            try await store.ingest("e1", user: "a")
            try await store.verifyAll()
            let task = try #require(try await store.claimAllDeliveries().first)
            try await store.finish(task, .retry(after: .milliseconds(1)), status: 503)
            try await Task.sleep(for: .milliseconds(20))
            let again = try #require(try await store.claimAllDeliveries().first)
            try await store.finish(again, .dead(disableSubscription: nil), status: 500)
            #expect(try await !store.recordDeliveryAttempt(again, owner: "conformance", attempt: DeliveryAttempt(
                startedAt: Date(), duration: .zero, statusCode: 200, errorKind: nil, error: nil, responseHead: nil
            ), next: .delivered, disableAfter: .seconds(60)), "a finished delivery takes no more attempts")

            let records = try await store.deliveries(eventID: "e1")
            #expect(records.count == 1)
            #expect(records.first?.status == .dead && records.first?.subscriptionID == subscription.id && records.first?.finishedAt != nil)
            #expect(records.first?.attempts.map(\.statusCode) == [503, 500])
            let letters = try await store.deadLetters(DeadLetterFilter(), beforeID: nil, limit: 10)
            #expect(letters.map(\.eventID) == ["e1"])
            #expect(letters.first?.lastStatusCode == 500 && letters.first?.attempts == 2)

            // 410 Gone disables the subscription.
            try await store.ingest("e2", user: "b")
            try await store.verifyAll()
            let gone = try #require(try await store.claimAllDeliveries().first)
            try await store.finish(gone, .dead(disableSubscription: "the subscriber answered 410 Gone"), status: 410)
            let after = try #require(try await store.subscription(id: subscription.id))
            #expect(!after.enabled && after.disabledReason == "the subscriber answered 410 Gone")
        }
    }

    /// Attempts recorded at once, as a busy delivery worker records them (the PostgreSQL
    /// store shares statements between them): each is stored once, a lease that is not ours
    /// is refused, and each subscription ends as its attempts one after another would leave it.
    @Test(arguments: StoreKind.all)
    func concurrentAttemptsAreEachRecordedAndLeaveEachSubscriptionsHealthRight(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let healthy = try await store.subscribe(types: [.tokenRotated], ordered: false)
            let failing = try await store.subscribe(types: [.phoneChanged], ordered: false)
            for n in 0..<20 {
                try await store.ingest("t\(n)", user: "u\(n)")
                try await store.ingest("p\(n)", user: "v\(n)", type: .phoneChanged, phone: "+1555000\(100 + n)")
            }
            try await store.verifyAll()
            let tasks = try await store.claimAllDeliveries()
            #expect(tasks.count == 40)
            let stranger = try #require(tasks.first)
            let recorded = await withTaskGroup(of: Bool.self) { group in
                for task in tasks {
                    group.addTask {
                        let ok = task.subscriptionID == healthy.id
                        let attempt = DeliveryAttempt(startedAt: Date(), duration: .milliseconds(5), statusCode: ok ? 200 : 503,
                                                      errorKind: ok ? nil : .status, error: nil, responseHead: ok ? "ok" : "busy")
                        return (try? await store.recordDeliveryAttempt(
                            task, owner: "conformance", attempt: attempt, next: ok ? .delivered : .retry(after: .seconds(60)),
                            disableAfter: .seconds(86_400)
                        )) ?? false
                    }
                }
                group.addTask {  // another worker's claim on a delivery it does not hold
                    (try? await store.recordDeliveryAttempt(
                        stranger, owner: "someone else",
                        attempt: DeliveryAttempt(startedAt: Date(), duration: .zero, statusCode: 200, errorKind: nil, error: nil, responseHead: nil),
                        next: .delivered, disableAfter: .seconds(86_400)
                    )) ?? true
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(recorded.filter { $0 }.count == 40, "every held lease recorded, the stranger refused")
            for n in 0..<20 {
                let token = try await store.deliveries(eventID: "t\(n)")
                #expect(token.map(\.status) == [.delivered] && token.first?.attempts.map(\.statusCode) == [200])
                let phone = try await store.deliveries(eventID: "p\(n)")
                #expect(phone.map(\.status) == [.pending] && phone.first?.attempts.map(\.statusCode) == [503])
            }
            let healthyAfter = try #require(try await store.subscription(id: healthy.id))
            #expect(healthyAfter.lastSuccessAt != nil && healthyAfter.failingSince == nil && healthyAfter.enabled)
            let failingAfter = try #require(try await store.subscription(id: failing.id))
            #expect(failingAfter.lastSuccessAt == nil && failingAfter.failingSince != nil && failingAfter.enabled)
        }
    }

    /// `/metrics`'s queue figures, read the way a scrape reads them.
    @Test(arguments: StoreKind.all)
    func queueStatsCountTheQueuesAndAgeTheirOldestDueItem(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            func stats() async throws -> [String: QueueStats] {
                Dictionary(uniqueKeysWithValues: try await store.queueStats().map { ($0.kind, $0) })
            }
            let empty = try await stats()
            #expect(empty.keys.sorted() == ["delivery", "replay", "verification"])
            #expect(empty.values.allSatisfy { $0.depth == 0 && $0.oldestDueAge == 0 })

            _ = try await store.subscribe(ordered: false)
            try await store.ingest("e1", user: "a")
            try await store.ingest("e2", user: "b")
            try await Task.sleep(for: .milliseconds(1100))
            let waiting = try await stats()
            #expect(waiting["verification"]?.depth == 2 && (waiting["verification"]?.oldestDueAge ?? 0) >= 1)
            try await store.verifyAll()
            try await Task.sleep(for: .milliseconds(1100))
            let verified = try await stats()
            #expect(verified["verification"]?.depth == 0 && verified["verification"]?.oldestDueAge == 0)
            #expect(verified["delivery"]?.depth == 2 && (verified["delivery"]?.oldestDueAge ?? 0) >= 1)
            _ = try await store.claimAllDeliveries()
            let leased = try await stats()
            #expect(leased["delivery"]?.depth == 2, "leased deliveries are still unfinished")
            #expect(leased["delivery"]?.oldestDueAge == 0, "but no longer due")
        }
    }

    /// What the alerts read (docs/alerts.yml): each subscription's state, how long it has
    /// failed, how long its oldest due delivery has waited, and whether EchoRelay or a
    /// person disabled it.
    @Test(arguments: StoreKind.all)
    func subscriptionHealthShowsFailuresWaitingDeliveriesAndWhoDisabled(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let waiting = try await store.subscribe(types: [.tokenRotated], ordered: false)
            let failing = try await store.subscribe(types: [.phoneChanged], ordered: false)
            let paused = try await store.subscribe(types: [.accountDeactivated], ordered: false)
            let deleted = try await store.subscribe(types: [.accountDeactivated], ordered: false)
            #expect(try await store.deleteSubscription(id: deleted.id))
            let fresh = try await store.subscriptionHealth()
            #expect(fresh.map(\.subscriptionID) == [waiting.id, failing.id, paused.id], "deleted subscriptions are not shown")
            #expect(fresh.allSatisfy { $0.enabled && !$0.disabledAutomatically && $0.failingFor == 0 && $0.oldestDueAge == 0 })

            try await store.ingest("t1", user: "a")
            try await store.ingest("p1", user: "b", type: .phoneChanged, phone: "+15550001111")
            try await store.verifyAll()
            let phone = try #require(try await store.claimAllDeliveries().first { $0.subscriptionID == failing.id })
            try await store.finish(phone, .retry(after: .seconds(60)), status: 503)
            try await Task.sleep(for: .milliseconds(1100))
            _ = try await store.setSubscriptionEnabled(id: paused.id, false, reason: SubscriptionHealth.disabledByPersonPrefix + "ops")

            let health = Dictionary(uniqueKeysWithValues: try await store.subscriptionHealth().map { ($0.subscriptionID, $0) })
            // t1's delivery was claimed with p1's and its lease has not ended: in flight, not waiting.
            #expect(health[waiting.id]?.oldestDueAge == 0 && health[waiting.id]?.failingFor == 0)
            #expect((health[failing.id]?.failingFor ?? 0) >= 1, "failing since its first failed attempt")
            #expect(health[failing.id]?.oldestDueAge == 0, "its delivery waits for its retry, not due yet")
            #expect(health[paused.id]?.enabled == false && health[paused.id]?.disabledAutomatically == false)

            // A delivery due and taken by nobody waits; a 410 disables its subscription automatically.
            try await store.ingest("t2", user: "c")
            try await store.verifyAll()
            try await Task.sleep(for: .milliseconds(1100))
            #expect((try await store.subscriptionHealth().first { $0.subscriptionID == waiting.id }?.oldestDueAge ?? 0) >= 1)
            let gone = try #require(try await store.claimAllDeliveries().first { $0.eventID == "t2" })
            try await store.finish(gone, .dead(disableSubscription: "the subscriber answered 410 Gone"), status: 410)
            let after = try #require(try await store.subscriptionHealth().first { $0.subscriptionID == waiting.id })
            #expect(!after.enabled && after.disabledAutomatically)
        }
    }

    @Test(arguments: StoreKind.all)
    func aSubscriptionsDeliveriesAreListedNewestFirstFilteredPagedAndTheirAttemptsShown(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let mine = try await store.subscribe(ordered: false)
            let other = try await store.subscribe(ordered: false)
            try await store.ingest("e1", user: "a")
            try await store.ingest("e2", user: "b", type: .phoneChanged, phone: "+15550001111")
            try await store.ingest("e3", user: "a")
            try await store.verifyAll()
            for task in try await store.claimAllDeliveries() where task.subscriptionID == mine.id {
                try await store.finish(task, task.eventID == "e2" ? .retry(after: .seconds(60)) : .delivered, status: task.eventID == "e2" ? 503 : 200)
            }
            let all = try await store.subscriptionDeliveries(subscriptionID: mine.id, SubscriptionDeliveryFilter(), beforeID: nil, limit: 10)
            #expect(all.map(\.eventID) == ["e3", "e2", "e1"])
            #expect(all.map(\.status) == [.delivered, .pending, .delivered])
            #expect(all[1].lastStatusCode == 503 && all[1].nextAttemptAt != nil && all[1].type == .phoneChanged && all[1].attempts == 1)
            #expect(all[0].userID == "a" && all[0].sequence == 2 && all[0].finishedAt != nil)
            func ids(_ filter: SubscriptionDeliveryFilter, before: Int64? = nil, limit: Int = 10) async throws -> [String] {
                try await store.subscriptionDeliveries(subscriptionID: mine.id, filter, beforeID: before, limit: limit).map(\.eventID)
            }
            #expect(try await ids(SubscriptionDeliveryFilter(userID: "a")) == ["e3", "e1"])
            #expect(try await ids(SubscriptionDeliveryFilter(status: .pending)) == ["e2"])
            #expect(try await ids(SubscriptionDeliveryFilter(type: .phoneChanged)) == ["e2"])
            #expect(try await ids(SubscriptionDeliveryFilter(since: Date(timeIntervalSinceNow: 3600))).isEmpty)
            #expect(try await ids(SubscriptionDeliveryFilter(until: Date(timeIntervalSinceNow: 3600))).count == 3)
            #expect(try await ids(SubscriptionDeliveryFilter(), before: all[0].id, limit: 1) == ["e2"])

            let attempts = try #require(try await store.deliveryAttempts(subscriptionID: mine.id, deliveryID: all[1].id))
            #expect(attempts.map(\.statusCode) == [503])
            let untried = try #require(try await store.subscriptionDeliveries(subscriptionID: other.id, SubscriptionDeliveryFilter(),
                                                                             beforeID: nil, limit: 1).first)
            #expect(try await store.deliveryAttempts(subscriptionID: other.id, deliveryID: untried.id) == [], "a delivery not yet tried")
            #expect(try await store.deliveryAttempts(subscriptionID: other.id, deliveryID: all[1].id) == nil, "another subscription's")
        }
    }

    @Test(arguments: StoreKind.all)
    func deletingASubscriptionCancelsItsPendingDeliveries(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe()
            try await store.ingest("e1", user: "a")
            try await store.verifyAll()
            #expect(try await store.deleteSubscription(id: subscription.id))
            #expect(try await store.deliveries(eventID: "e1").map(\.status) == [.cancelled])
            #expect(try await store.claimAllDeliveries().isEmpty)
        }
    }

    // MARK: Access tokens

    @Test(arguments: StoreKind.all)
    func accessTokensAreStoredHashedFoundByHashAndRevoked(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let (record, token) = try await store.createAccessToken(name: "Sam", role: .support)
            #expect(AccessTokenText.isWellFormed(token.revealed))
            let principal = try await store.principal(forTokenHash: AccessTokenText.hash(token.revealed))
            #expect(principal == Principal(tokenID: record.id, name: "Sam", role: .support))
            #expect(try await store.accessTokens().map(\.id) == [record.id])
            #expect(try await store.revokeAccessToken(id: record.id))
            #expect(try await !store.revokeAccessToken(id: record.id))
            #expect(try await store.principal(forTokenHash: AccessTokenText.hash(token.revealed)) == nil)
            #expect(try await store.accessTokens().first?.isRevoked == true)
            await #expect(throws: AccessTokenNameError.self) { _ = try await store.createAccessToken(name: "", role: .app) }
        }
    }

    // MARK: Console sessions

    @Test(arguments: StoreKind.all)
    func consoleSessionsAreFoundByKeyHashAndEndWithSignOutExpiryOrTheirToken(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let (record, _) = try await store.createAccessToken(name: "Sam", role: .support)
            let sam = Principal(tokenID: record.id, name: "Sam", role: .support)
            let later = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 3600).rounded())  // exact in both stores
            let samSession = ConsoleSession(principal: sam, formToken: "form-1", expiresAt: later)
            try await store.createConsoleSession(keyHash: Array(repeating: 1, count: 32), samSession)
            let adminSession = ConsoleSession(principal: .environmentAdmin, formToken: "form-2", expiresAt: later)
            try await store.createConsoleSession(keyHash: Array(repeating: 2, count: 32), adminSession)
            try await store.createConsoleSession(keyHash: Array(repeating: 3, count: 32),
                                                 ConsoleSession(principal: sam, formToken: "form-3", expiresAt: Date().addingTimeInterval(-1)))

            #expect(try await store.consoleSession(keyHash: Array(repeating: 1, count: 32)) == samSession)
            #expect(try await store.consoleSession(keyHash: Array(repeating: 2, count: 32)) == adminSession)
            #expect(try await store.consoleSession(keyHash: Array(repeating: 3, count: 32)) == nil, "expired")
            #expect(try await store.consoleSession(keyHash: Array(repeating: 4, count: 32)) == nil, "unknown")

            #expect(try await store.revokeAccessToken(id: record.id))
            #expect(try await store.consoleSession(keyHash: Array(repeating: 1, count: 32)) == nil, "its token was revoked")
            try await store.deleteConsoleSession(keyHash: Array(repeating: 2, count: 32))
            #expect(try await store.consoleSession(keyHash: Array(repeating: 2, count: 32)) == nil, "signed out")
        }
    }

    @Test(arguments: StoreKind.all)
    func expiredConsoleSessionsAreRemovedAndLiveOnesKept(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let later = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 3600).rounded())
            let live = ConsoleSession(principal: .environmentAdmin, formToken: "form-live", expiresAt: later)
            try await store.createConsoleSession(keyHash: Array(repeating: 5, count: 32), live)
            for key in [6, 7] as [UInt8] {
                try await store.createConsoleSession(keyHash: Array(repeating: key, count: 32),
                                                     ConsoleSession(principal: .environmentAdmin, formToken: "old", expiresAt: Date().addingTimeInterval(-1)))
            }
            #expect(try await store.removeExpiredConsoleSessions() == 2)
            #expect(try await store.removeExpiredConsoleSessions() == 0, "removed, not only counted")
            #expect(try await store.consoleSession(keyHash: Array(repeating: 5, count: 32)) == live)
        }
    }

    // MARK: Replays

    @Test(arguments: StoreKind.all)
    func aReplayAddsADeliveryWithTheSameWebhookIDAndItsMarker(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let first = try await store.subscribe()
            let second = try await store.subscribe()
            try await store.ingest("e1", user: "a")
            try await store.ingest("e2", user: "a")
            try await store.verifyAll { task in
                task.eventID == "e2" ? .rejected(.unknownToken) : VerificationOutcome(status: .verified, reason: .providerConfirmed)
            }
            let originals = try await store.claimAllDeliveries()
            for task in originals { try await store.finish(task) }

            let receipt = try await store.replayEvent(id: "e1", subscriptionIDs: [second.id], actor: supportActor, reason: "lost")
            #expect(receipt.matched == 1 && receipt.subscriptionIDs == [second.id] && receipt.id.hasPrefix("rpl_"))
            let replayed = try await store.claimAllDeliveries()
            #expect(replayed.count == 1)
            #expect(replayed.first?.webhookID == originals.first { $0.subscriptionID == second.id }?.webhookID)
            #expect(replayed.first?.replay?.id == receipt.id)
            #expect(try await store.deliveries(eventID: "e1").map(\.replayID).filter { $0 != nil }.count == 1)

            let all = try await store.replayEvent(id: "e1", subscriptionIDs: nil, actor: supportActor, reason: "again")
            #expect(Set(all.subscriptionIDs) == [first.id, second.id])
            await #expect(throws: ReplayError.notVerified(.rejected)) {
                _ = try await store.replayEvent(id: "e2", subscriptionIDs: nil, actor: supportActor, reason: "r")
            }
            await #expect(throws: ReplayError.eventNotFound) {
                _ = try await store.replayEvent(id: "nope", subscriptionIDs: nil, actor: supportActor, reason: "r")
            }
            await #expect(throws: ReplayError.unknownSubscriptions(["sub_nope"])) {
                _ = try await store.replayEvent(id: "e1", subscriptionIDs: [first.id, "sub_nope"], actor: supportActor, reason: "r")
            }
            let audit = try await store.auditEntries(AuditQuery(action: "event.replay"))
            #expect(audit.map(\.reason) == ["again", "lost"])
            #expect(audit.allSatisfy { $0.actorName == "conformance support" && $0.actorRole == "support" && $0.target == "e1" })
        }
    }

    /// A replay that would send nothing is refused, and leaves no replay and no audit entry.
    @Test(arguments: StoreKind.all)
    func aReplayThatWouldSendNothingIsRefusedAndWritesNothing(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe(types: [.tokenRotated])
            try await store.ingest("e1", user: "a")
            try await store.verifyAll()
            for task in try await store.claimAllDeliveries() { try await store.finish(task) }
            _ = try await store.setSubscriptionEnabled(id: subscription.id, false, reason: "backend retired")

            await #expect(throws: ReplayError.noSubscription(eventType: "token.rotated")) {
                _ = try await store.replayEvent(id: "e1", subscriptionIDs: nil, actor: supportActor, reason: "r")
            }
            await #expect(throws: ReplayError.nothingMatched) {
                _ = try await store.startReplay(ReplayFilter(userID: "a"), actor: supportActor, reason: "r")
            }
            await #expect(throws: ReplayError.nothingMatched) {
                _ = try await store.startReplay(ReplayFilter(userID: "nobody", subscriptionID: subscription.id), actor: supportActor, reason: "r")
            }
            #expect(try await store.auditEntries(AuditQuery()).filter { $0.action.hasPrefix("event.replay") || $0.action.hasPrefix("replay.") }.isEmpty)
            #expect(try await store.deliveries(eventID: "e1").allSatisfy { $0.replayID == nil })

            // Named, the disabled subscription is taken (its delivery waits until enabled).
            let named = try await store.replayEvent(id: "e1", subscriptionIDs: [subscription.id], actor: supportActor, reason: "named")
            #expect(named.matched == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func aBulkReplayCountsThenQueuesItsDeliveriesInPerUserOrderUnderACursor(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe()
            for index in 1...3 { try await store.ingest("a\(index)", user: "a") }
            for index in 1...2 { try await store.ingest("b\(index)", user: "b") }
            try await store.verifyAll()
            try await store.deliverAll()

            let filter = ReplayFilter(userID: "a")
            #expect(try await store.countReplay(filter) == 3)
            #expect(try await store.countReplay(ReplayFilter()) == 5)
            #expect(try await store.countReplay(ReplayFilter(status: .dead)) == 0)
            #expect(try await store.countReplay(ReplayFilter(subscriptionID: subscription.id, types: [.phoneChanged])) == 0)
            #expect(try await store.countReplay(ReplayFilter(since: Date().addingTimeInterval(3600))) == 0)

            let replay = try await store.startReplay(filter, actor: supportActor, reason: "bulk")
            #expect(replay.kind == .bulk && replay.state == .running && replay.matched == 3 && replay.sent == 0)
            #expect(try await store.claimAllDeliveries().isEmpty, "nothing is queued until the job advances")
            #expect(try await store.advanceReplays(limit: 2) == 2)
            #expect(try await store.replay(id: replay.id)?.sent == 2)
            #expect(try await store.advanceReplays(limit: 2) == 1)
            #expect(try await store.advanceReplays(limit: 2) == nil, "no replay has work left")

            let delivered = try await store.deliverAll { tasks in
                #expect(tasks.count == 1, "ordered: one of the user's replays at a time")
            }
            #expect(delivered.allSatisfy { $0.replay?.id == replay.id })
            #expect(delivered.map(\.sequence) == [1, 2, 3])
            let done = try #require(try await store.replay(id: replay.id))
            #expect(done.state == .completed && done.sent == 3 && done.delivered == 3 && done.failed == 0 && done.finishedAt != nil)
            #expect(try await store.auditEntries(AuditQuery(action: "replay.start")).first?.filter == filter.json)
        }
    }

    @Test(arguments: StoreKind.all)
    func aCancelledReplayStopsAndCannotBeCancelledTwice(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            _ = try await store.subscribe()
            for index in 1...3 { try await store.ingest("a\(index)", user: "a") }
            try await store.verifyAll()
            try await store.deliverAll()
            let replay = try await store.startReplay(ReplayFilter(userID: "a"), actor: supportActor, reason: "r")
            #expect(try await store.advanceReplays(limit: 1) == 1)
            let cancelled = try #require(try await store.cancelReplay(id: replay.id, actor: supportActor, reason: "wrong user"))
            #expect(cancelled.state == .cancelled && cancelled.finishedAt != nil)
            #expect(try await store.advanceReplays(limit: 10) == nil)
            #expect(try await store.claimAllDeliveries().isEmpty, "its queued delivery was cancelled")
            await #expect(throws: ReplayError.finished(.cancelled)) {
                _ = try await store.cancelReplay(id: replay.id, actor: supportActor, reason: "again")
            }
            #expect(try await store.cancelReplay(id: "rpl_nope", actor: supportActor, reason: "r") == nil)
        }
    }

    @Test(arguments: StoreKind.all)
    func onlyAnUnverifiableEventIsReverifiedAndItGetsANewWorkItem(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            try await store.ingest("e1", user: "a")
            try await store.ingest("e2", user: "a")
            try await store.verifyAll { task in
                task.eventID == "e1" ? .unverifiable(.providerUnavailable) : VerificationOutcome(status: .verified, reason: .providerConfirmed)
            }
            let echo = EchoCredentials(serviceProvider: "https://api.example.com/fresh", authorization: Secret("OAuth fresh"))
            try await store.reverify(eventID: "e1", proof: .echo(echo), actor: supportActor, reason: "provider back")
            #expect(try await store.event(id: "e1")?.status == .pending)
            let tasks = try await store.claimVerifications(owner: "w", limit: 10, lease: .seconds(60))
            #expect(tasks.map(\.eventID) == ["e1"])
            #expect(tasks.first?.echo == echo && tasks.first?.attempts == 1)
            await #expect(throws: ReplayError.notUnverifiable(.verified)) {
                try await store.reverify(eventID: "e2", proof: .echo(echo), actor: supportActor, reason: "r")
            }
            await #expect(throws: ReplayError.eventNotFound) {
                try await store.reverify(eventID: "nope", proof: .echo(echo), actor: supportActor, reason: "r")
            }
        }
    }

    // MARK: Support reads

    @Test(arguments: StoreKind.all)
    func aTimelineIsNewestFirstFilteredPagedAndSummarisesDeliveries(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let all = try await store.subscribe()
            let gone = try await store.subscribe(types: [.tokenRotated])
            try await store.ingest("a1", user: "a")
            try await store.ingest("a2", user: "a", type: .accountDeactivated)
            try await store.ingest("a3", user: "a")
            try await store.ingest("b1", user: "b")
            try await store.verifyAll { task in
                task.eventID == "a2" ? .rejected(.accountActive) : VerificationOutcome(status: .verified, reason: .providerConfirmed)
            }
            #expect(try await store.deleteSubscription(id: gone.id))  // cancels its pending deliveries
            let timeline = try await store.timeline(TimelineQuery(userID: "a"))
            #expect(timeline.map(\.event.id) == ["a3", "a2", "a1"])
            #expect(timeline.map(\.deliveries.pending) == [1, 0, 1])
            let states = [SubscriptionDeliveryState(subscriptionID: all.id, status: .pending),
                          SubscriptionDeliveryState(subscriptionID: gone.id, status: .cancelled)].sorted { $0.subscriptionID < $1.subscriptionID }
            #expect(timeline.map(\.deliveries.bySubscription) == [states, [], states])
            #expect(timeline[1].event.reason == .accountActive)
            #expect(try await store.timeline(TimelineQuery(userID: "a", types: [.accountDeactivated])).map(\.event.id) == ["a2"])
            #expect(try await store.timeline(TimelineQuery(userID: "a", statuses: [.verified])).map(\.event.id) == ["a3", "a1"])
            #expect(try await store.timeline(TimelineQuery(userID: "a", beforeSequence: 3, limit: 1)).map(\.event.id) == ["a2"])
            #expect(try await store.timeline(TimelineQuery(userID: "a", until: Date().addingTimeInterval(-3600))).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all)
    func deadLettersAreRedrivenWithAFreshScheduleAndAnAuditEntry(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let subscription = try await store.subscribe()
            try await store.ingest("e1", user: "a")
            try await store.verifyAll()
            let task = try #require(try await store.claimAllDeliveries().first)
            try await store.finish(task, .dead(disableSubscription: nil), status: 500)

            #expect(try await store.redriveDeadLetters(DeadLetterFilter(subscriptionID: "sub_other"), dryRun: false,
                                                       actor: supportActor, reason: "r") == 0)
            #expect(try await store.redriveDeadLetters(DeadLetterFilter(), dryRun: true, actor: supportActor, reason: "r") == 1)
            #expect(try await store.deliveries(eventID: "e1").first?.status == .dead, "a dry run changes nothing")
            #expect(try await store.redriveDeadLetters(DeadLetterFilter(subscriptionID: subscription.id), dryRun: false,
                                                       actor: supportActor, reason: "fixed") == 1)
            let again = try #require(try await store.claimAllDeliveries().first)
            #expect(again.webhookID == task.webhookID && again.attempts == 1)
            #expect(try await store.deadLetters(DeadLetterFilter(), beforeID: nil, limit: 10).isEmpty)
            let audit = try await store.auditEntries(AuditQuery(action: "dead_letters.redrive"))
            #expect(audit.count == 2, "both real redrives are audited; the dry run is not")
            #expect(audit.first?.matched == 1 && audit.first?.reason == "fixed")
        }
    }

    @Test(arguments: StoreKind.all)
    func theAuditLogIsNewestFirstFilteredAndPaged(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let admin = Principal(tokenID: "tok_1", name: "Ada", role: .admin)
            for index in 1...3 {
                try await store.recordAudit(actor: admin, action: "subscription.update", target: "sub_\(index)", filter: nil,
                                            matched: nil, reason: nil)
            }
            try await store.recordAudit(actor: supportActor, action: "replay.start", target: "rpl_1",
                                        filter: .object(["user_id": .string("u")]), matched: 4, reason: "why")
            let all = try await store.auditEntries(AuditQuery())
            #expect(all.map(\.action) == ["replay.start", "subscription.update", "subscription.update", "subscription.update"])
            #expect(all.first?.filter == .object(["user_id": .string("u")]) && all.first?.matched == 4)
            #expect(all.last?.actorTokenID == "tok_1")
            #expect(try await store.auditEntries(AuditQuery(actorName: "Ada")).count == 3)
            #expect(try await store.auditEntries(AuditQuery(target: "sub_2")).count == 1)
            let page = try await store.auditEntries(AuditQuery(beforeID: all[1].id, limit: 10))
            #expect(page.map(\.target) == ["sub_2", "sub_1"])
            #expect(try await store.auditEntries(AuditQuery(since: Date().addingTimeInterval(3600))).isEmpty)
        }
    }

    // MARK: Several processes — differs by design

    /// PostgreSQL serves several processes on one database, and their claims never overlap.
    /// The embedded store serves one process: a second opener of the file is refused, with an
    /// error that points to PostgreSQL, until the first lets go.
    @Test(arguments: StoreKind.all)
    func aSecondStoreOnTheSameDatabase(kind: StoreKind) async throws {
        switch kind {
        case .postgres, .postgresByUser:
            try await TestDatabase.withFresh { database in
                try await database.withClient { first in
                    try await database.withClient { second in
                        try await StoreHarness.migrate(first, for: kind)
                        let stores = [PostgresEventStore(client: first, logger: TestLogger.quiet),
                                      PostgresEventStore(client: second, logger: TestLogger.quiet)]
                        for index in 0..<20 { try await stores[0].ingest("e\(index)", user: "u\(index)") }
                        let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
                            for (index, store) in stores.enumerated() {
                                group.addTask {
                                    var ids: [String] = []
                                    while case let tasks = try await store.claimVerifications(owner: "p\(index)", limit: 3, lease: .seconds(60)),
                                          !tasks.isEmpty {
                                        ids += tasks.map(\.eventID)
                                    }
                                    return ids
                                }
                            }
                            return try await group.reduce(into: []) { $0 += $1 }
                        }
                        #expect(claimed.count == 20 && Set(claimed).count == 20, "every item claimed once, by one process")
                    }
                }
            }
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("echorelay-second-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let path = folder.appendingPathComponent("echorelay.sqlite").path
            let first = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            do {
                _ = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
                Issue.record("a second store opened a file already in use")
            } catch let error as SQLiteStoreError {
                #expect(error == .locked(path: path))
                #expect(error.description.contains("PostgreSQL"))
            }
            try await first.close()
            let reopened = try await SQLiteEventStore.open(path: path, logger: TestLogger.quiet)
            try await reopened.close()
        }
    }
}
