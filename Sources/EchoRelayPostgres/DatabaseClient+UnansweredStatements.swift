import EchoRelayCore
import EchoRelayQueue
import PostgresNIO
import Synchronization

// MARK: Statements that are never answered

extension DatabaseClient {
    /// A statement sent through `query` or `execute` and not answered yet.
    struct Unanswered {
        let pool: ObjectIdentifier
        let host: Int
        /// When it is given up: `statementLimit` after it was sent, or soon after its pool
        /// was retired.
        var deadline: ContinuousClock.Instant
        /// Answers its caller with an error, unless it was answered already.
        let fail: @Sendable (any Error) -> Bool
    }

    /// How long a statement may still take once its host was dropped and its pool retired.
    static let retiredPoolGrace = Duration.seconds(2)

    /// Runs `send` (a statement on host `index`'s pool `pool`) in a task of its own, and
    /// answers with its result or, if it is never answered, with an error. postgres-nio's
    /// pool can lend a connection that has just closed, and a statement written to it is lost
    /// without an error: its caller would wait for ever. In the pg_auto_failover scenario the
    /// delivery worker's claim did, after the failover, and nothing was delivered again.
    /// The check loop of `run()` fails such a statement `statementLimit` after it was sent, or
    /// `retiredPoolGrace` after its host was dropped (`failUnansweredStatements`). The caller's
    /// cancellation reaches the statement's task, as if the caller had sent it itself.
    func answered<Value: Sendable>(
        _ index: Int, _ pool: PostgresClient, _ send: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        guard single == nil else { return try await send() }  // no check loop runs
        let sending = Mutex<Task<Void, Never>?>(nil)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, any Error>, Never>) in
                let once = FirstAnswer(continuation)
                let watched = Unanswered(pool: ObjectIdentifier(pool), host: index,
                                         deadline: .now + statementLimit) { once.answer(.failure($0)) }
                // Numbered and watched in one lock: this runs for every statement.
                let number = state.withLock { state in
                    state.nextStatement += 1
                    state.unanswered[state.nextStatement] = watched
                    return state.nextStatement
                }
                let task = Task {
                    let result = await Result { try await send() }
                    state.withLock { _ = $0.unanswered.removeValue(forKey: number) }
                    once.answer(result)
                }
                sending.withLock { $0 = task }
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            // As if the caller sent it itself: a statement still waiting for a connection
            // (the database away) gives up, so a stop is not held.
            sending.withLock { $0 }?.cancel()
        }
        return try result.get()
    }

    /// Fails the statements past their deadline (see `answered`), and drops the host of each
    /// one whose pool was still in use: it stopped answering.
    func failUnansweredStatements() {
        let now = ContinuousClock.now
        let due = state.withLock { state -> [(statement: Unanswered, poolInUse: Bool)] in
            let due = state.unanswered.filter { $0.value.deadline <= now }
            for number in due.keys { state.unanswered[number] = nil }
            return due.values.map { ($0, ObjectIdentifier(state.pools[$0.host]) == $0.pool) }
        }
        guard !due.isEmpty else { return }
        // Said first: dropping the host closes the statements' connections, which fails them.
        logger.warning("giving up statements that the database never answered (sent on a connection that had closed?)",
                       metadata: ["db.statements": "\(due.count)"])
        // The host before the statements fail, so that a caller trying again at once gets a new pool.
        for index in Set(due.filter(\.poolInUse).map(\.statement.host)).sorted() {
            drop(index, because: "a statement was not answered within \(DurationText.format(statementLimit)) (the server stopped answering?)")
        }
        for (statement, poolInUse) in due {
            _ = statement.fail(poolInUse
                ? StoreError.unavailable("the database host \(names[statement.host]) did not answer a statement within \(DurationText.format(statementLimit))")
                : StoreError.unavailable("the database host \(names[statement.host]) went away"))
        }
    }
}
