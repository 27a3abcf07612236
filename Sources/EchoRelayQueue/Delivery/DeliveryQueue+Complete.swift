import EchoRelayCore
import Logging

extension DeliveryQueue {
    /// Once `outgoing`'s webhook has been answered (`record`, a hard stop's cancellation too):
    /// frees its slot, writes the attempt with its siblings', and says what it left for the
    /// loop to send next. Cancelled, it gives the delivery back and records nothing.
    public func complete(_ outgoing: Outgoing, _ record: AttemptRecord) async -> WorkLeft {
        let task = outgoing.task
        inFlight.finished(task.subscriptionID)
        answered.insert(task.deliveryID)
        defer { answered.remove(task.deliveryID) }
        // The slot is free now, in this process's count and in the claim's (an answered lease
        // holds none): the loop fills it, from what was claimed ahead or handed off, while the
        // attempt is recorded rather than after (a group commit's flush or two). Without asking
        // for a claim: the loop claims only if the last one found something (`ClaimPacing`).
        wake.wake(claim: false)
        if Task.isCancelled {
            outgoing.siblings?.abandon()
            await Task { try? await store.releaseDeliveries(ids: [task.deliveryID], owner: owner) }.value
            return .nothing
        }
        let attempt = record.attempt, next = record.next
        let recorded = if let siblings = outgoing.siblings { await siblings.record(record) } else { await writeAttempts([record])[0] }
        let written: FinishedWork
        do {
            written = try recorded.get()
            guard written.kept else {
                logger.warning("lease lost before the attempt was recorded; another worker has the delivery",
                               metadata: Self.metadata(task))
                return .nothing
            }
        } catch {
            logger.error("recording the delivery attempt failed", metadata: Self.metadata(task, ["error": "\(error)"]))
            return .nothing
        }
        metrics.deliveryAttempted(outcome: next.outcome, duration: attempt.duration, errorKind: attempt.errorKind)
        log(task, attempt: attempt, next: next)
        // The loop looks again when there is something to take: due deliveries only a claim
        // finds, or deliveries in the inbox (this record's successors, or ones that waited for
        // their subscription's slot). The record says whether it made deliveries due without
        // leasing them, or found its subscription's due deliveries left to nobody (a claim
        // stopped at the cap leaves them, and this attempt freed a slot): only then is a claim
        // worth its cost. Tried before: claiming after every final delivery (a claim an event
        // at 100 events/s, finding nothing), and only when a subscription had been at its cap
        // since the last claim (a 13,500-event backlog took 27 s to drain instead of 7.6: the
        // process's count of a subscription's webhooks lags the database's).
        if written.madeWorkDue { return .forClaim }
        return handOffs.isEmpty && waitingForSlot.isEmpty && claimedAhead.isEmpty ? .nothing : .inInbox
    }

    /// The attempt's line: a delivered one is one among many (debug, and the summary at info).
    func log(_ task: DeliveryTask, attempt answer: DeliveryAttempt, next: DeliveryNext) {
        let outcome = switch next {
        case .delivered: "deliveries.delivered"
        case .retry: "deliveries.retried"
        case .dead: "deliveries.dead"
        }
        summary.count(outcome, logger: logger)
        switch next {
        case .delivered:
            logger.debug("delivered", metadata: Self.metadata(task, ["http.status": "\(answer.statusCode ?? 0)"]))
        case .retry(let delay):
            logger.notice("delivery failed, will retry", metadata: Self.metadata(task, [
                "http.status": "\(answer.statusCode.map(String.init) ?? "none")", "error.kind": "\(answer.errorKind?.rawValue ?? "none")",
                "error": "\(answer.error ?? "")",
                "retry.in": "\(DurationText.format(delay))",
            ]))
        case .dead(let disabled):
            logger.warning("delivery dead-lettered", metadata: Self.metadata(task, [
                "http.status": "\(answer.statusCode.map(String.init) ?? "none")", "error.kind": "\(answer.errorKind?.rawValue ?? "none")",
                "error": "\(answer.error ?? "")",
                "subscription.disabled": "\(disabled ?? "no")",
            ]))
        }
    }

    /// What a log line about `task` carries. Built only for a line that is written: setting
    /// a logger's metadata key by key formatted it anew each time (3% of serve's CPU in perf).
    static func metadata(_ task: DeliveryTask, _ more: Logger.Metadata = [:]) -> Logger.Metadata {
        more.merging([
            "event.id": "\(task.eventID)", "user.id": "\(task.userID)",
            "subscription.id": "\(task.subscriptionID)", "delivery.attempt": "\(task.attempts)",
        ]) { mine, _ in mine }
    }
}
