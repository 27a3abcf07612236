import EchoRelayCore
import EchoRelayQueue
import EchoRelaySharedSignals
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Polls the transmitter for SETs (RFC 8936) and records each as a pushed one is recorded.
/// A `jti` is acknowledged only in a poll sent after its SET is committed, so a process killed
/// in between gets the SET again and its permanent `jti` key makes the copy harmless; a SET
/// that fails a check goes back in `setErrs` and is recorded refused. One process polls at a
/// time (the store's poller lock). Errors back off with full jitter; `moreAvailable`, and
/// acknowledgements to send, poll again at once.
struct SecurityEventPoller: Service, CustomStringConvertible {
    var description: String { "SecurityEventPoller" }

    let store: any EchoRelayStore
    let receiver: SecurityEventReceiver
    let ready: Gate
    let metrics: RelayMetrics
    /// A SET became an event: this process's verify worker is woken.
    let workCreated: @Sendable () -> Void
    let logger: Logger

    func run() async throws {
        let stopping = Mutex(false)
        let wake = WakeSignal()
        await withGracefulShutdownHandler {
            await ready.wait()
            while !stopping.withLock({ $0 }) {
                // Nothing to poll until a poll URL is set or a poll stream is registered.
                guard await pollURL() != nil else {
                    await wake.wait(upTo: settings.lockRetryInterval)
                    continue
                }
                do {
                    let held = try await store.withPollerLock { stillHeld in
                        logger.info("polling the Shared Signals transmitter", metadata: ["set.poll_url": "\(settings.url ?? "the registered stream's endpoint")"])
                        await poll(while: { !stopping.withLock { $0 } }, stillHeld: stillHeld, wake: wake)
                        // A process that does not poll reports no age, so that it does not alert.
                        metrics.securityEventPollAge(.zero)
                    }
                    if !held { logger.debug("another process polls the transmitter; checking again later") }
                } catch {
                    logger.warning("the poller's lock could not be taken", metadata: ["error": "\(error)"])
                }
                guard !stopping.withLock({ $0 }) else { break }
                await wake.wait(upTo: settings.lockRetryInterval)
            }
        } onGracefulShutdown: {
            stopping.withLock { $0 = true }
            wake.wake()
            ready.open()
        }
    }

    /// Polls until `running` says stop or the lock is lost.
    private func poll(while running: @Sendable () -> Bool, stillHeld: @Sendable () async -> Bool, wake: WakeSignal) async {
        var pending = Pending()
        var failures = 0, storeFailures = 0
        let lastSuccess = LastSuccess()
        await withTaskGroup(of: Void.self) { group in
            // The age of the last successful poll, kept current while a poll is held open.
            group.addTask { [metrics] in
                while !Task.isCancelled {
                    metrics.securityEventPollAge(lastSuccess.age)
                    try? await Task.sleep(for: .seconds(5))
                }
            }
            defer { group.cancelAll() }
            while running() {
                guard await stillHeld() else {
                    logger.warning("the poller's lock was lost (its database connection ended); polling stops here")
                    return
                }
                guard let url = await pollURL() else {
                    logger.info("no poll stream is registered any more (a push stream replaced it); polling stops")
                    return
                }
                let began = ContinuousClock.now
                let request = PollExchange.Request(maxEvents: settings.maxEvents, ack: pending.acks, setErrs: pending.errors)
                let answer: PollExchange.Answer
                switch await exchange(request, url: url) {
                case .success(let answered):
                    answer = answered
                case .failure(let error):
                    guard running() else { continue }  // the shutdown cut the poll short
                    metrics.securityEventPollFailed(kind: error.kind)
                    if error == .timedOut { continue }  // a long poll cut short: poll again
                    failures += 1
                    let delay = backoff(after: failures, error: error)
                    logger.warning("polling the transmitter failed; trying again", metadata: [
                        "error": "\(error)", "retry_in_ms": "\(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)",
                    ])
                    await wake.wait(upTo: delay)
                    continue
                }
                // The transmitter has what this poll carried.
                metrics.securityEventsAcknowledged(pending.acks.count)
                pending = Pending()
                failures = 0
                lastSuccess.now()
                metrics.securityEventPollAge(.zero)
                metrics.securityEventsPolled(answer.sets.count)
                let recorded = await record(answer.sets, into: &pending)
                storeFailures = recorded == .storeFailed ? storeFailures + 1 : 0
                switch recorded {
                case .recorded:
                    if answer.moreAvailable || !pending.isEmpty { continue }
                case .keysBeingFetched:
                    if !pending.isEmpty { continue }
                    await wake.wait(upTo: .seconds(1))
                    continue
                case .storeFailed:
                    // The store is away: what was recorded is acknowledged after the wait, and the rest comes again.
                    await wake.wait(upTo: backoff(after: storeFailures, error: nil))
                    continue
                }
                // A transmitter that answers an empty long poll at once is not polled in a spin.
                let elapsed = ContinuousClock.now - began
                if answer.sets.isEmpty, elapsed < settings.minimumInterval { await wake.wait(upTo: settings.minimumInterval - elapsed) }
            }
            // What was committed is acknowledged before the poller stops, so it is not sent again.
            if !pending.isEmpty {
                let request = PollExchange.Request(maxEvents: 0, returnImmediately: true, ack: pending.acks, setErrs: pending.errors)
                if let url = await pollURL(), (try? await PollExchange.send(request, to: url, token: token, timeout: .seconds(5))) != nil {
                    metrics.securityEventsAcknowledged(pending.acks.count)
                }
            }
        }
    }

    private var settings: SecurityEventPollSettings { receiver.settings.poll }
    /// `ECHORELAY_SET_POLL_TOKEN`, else the transmitter token.
    private var token: Secret? { settings.token ?? receiver.settings.transmitterToken }

    /// One poll, cut short by a graceful shutdown (a long poll may be held open for a minute).
    private func exchange(_ request: PollExchange.Request, url: String) async -> Result<PollExchange.Answer, PollExchange.PollError> {
        let (settings, token) = (settings, token)
        return await cancelWhenGracefulShutdown {
            do throws(PollExchange.PollError) {
                return .success(try await PollExchange.send(request, to: url, token: token, timeout: settings.wait))
            } catch {
                return .failure(error)
            }
        }
    }

    /// When a poll last succeeded (before the first: when polling began).
    private final class LastSuccess: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        func now() { instant.withLock { $0 = .now } }
        var age: Duration { ContinuousClock.now - instant.withLock { $0 } }
    }

    /// What the next poll tells the transmitter.
    private struct Pending {
        var acks: [String] = []
        var errors: [String: PollExchange.SetError] = [:]
        var isEmpty: Bool { acks.isEmpty && errors.isEmpty }
    }

    /// What became of an answer's SETs.
    private enum Recorded {
        /// Each is recorded or refused.
        case recorded
        /// One or more come again: the transmitter's keys could not be fetched yet.
        case keysBeingFetched
        /// The store could not take one: it and those after it come again.
        case storeFailed
    }

    /// Checks and records each SET in order, stopping at the first the store cannot take.
    private func record(_ sets: [(jti: String, token: String)], into pending: inout Pending) async -> Recorded {
        var retryLater = false
        for (jti, token) in sets {
            var logger = logger
            logger[metadataKey: "set.jti"] = "\(jti)"
            let refusal: SecurityEventRefusal
            switch await receiver.receive(token) {
            case .success(let received) where received.jti == jti:
                do {
                    let receipt = try await store.receiveSecurityEvent(received)
                    pending.acks.append(jti)
                    if case .recorded(_, let event?) = receipt {
                        workCreated()
                        logger.info("polled SET accepted as an event", metadata: ["event.id": "\(event.id)", "event.sequence": "\(event.sequence)"])
                    } else {
                        logger.info("polled SET recorded", metadata: ["set.event_type": "\(received.eventType)"])
                    }
                    continue
                } catch {
                    logger.warning("a polled SET could not be stored; it is not acknowledged and comes again", metadata: ["error": "\(error)"])
                    return .storeFailed
                }
            case .success:
                refusal = .invalidRequest("the SET's jti is not the key it was sent under")
            case .failure(let found) where found.retryAfter != nil:
                retryLater = true
                continue
            case .failure(let found):
                refusal = found
            }
            logger.notice("polled SET refused", metadata: ["set.err": "\(refusal.code)", "reason": "\(refusal.description)"])
            do {
                try await store.recordRefusedSecurityEvent(RefusedSecurityEvent(
                    issuer: receiver.settings.issuer, jti: jti, fingerprint: SecurityEventReceiver.fingerprint(token),
                    err: refusal.code, description: refusal.description
                ))
            } catch {
                logger.warning("a refused SET could not be recorded; it is not reported and comes again", metadata: ["error": "\(error)"])
                return .storeFailed
            }
            metrics.securityEventsRefusedByPoll()
            pending.errors[jti] = .init(err: refusal.code, description: refusal.description)
        }
        return retryLater ? .keysBeingFetched : .recorded
    }

    /// `ECHORELAY_SET_POLL_URL`, else the endpoint of the poll stream `sets stream create` registered.
    private func pollURL() async -> String? {
        if let url = settings.url { return url }
        guard let stream = try? await store.securityEventStream(), stream.delivery == .poll else { return nil }
        return stream.endpointURL
    }

    /// Full jitter over an exponential ceiling, or the transmitter's own `Retry-After`.
    private func backoff(after failures: Int, error: PollExchange.PollError?) -> Duration {
        if case .status(_, let retryAfter?)? = error { return min(retryAfter, settings.maximumBackoff) }
        let ceiling = min(Double(settings.maximumBackoff.components.seconds), pow(2, Double(min(failures, 16) - 1)))
        return .milliseconds(Int64(Double.random(in: 0.1 ... max(0.1, ceiling)) * 1000))
    }
}

