import Synchronization

/// What `/readyz` learned of the store's migrations, kept so that a probe costs no statement.
/// Once every migration is found applied, that stays the answer: this process's migrations
/// are compiled in and never undone. Until then (some pending, or the database did not
/// answer) the store is asked again at most every `recheckAfter`, and one request asks for
/// all that come meanwhile.
public final class RememberedReadiness: Sendable {
    public static let recheckAfter = Duration.seconds(2)

    private struct State {
        var current = false
        var last: (answer: Readiness, at: ContinuousClock.Instant)?
        var asking: Task<Readiness, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    /// The remembered answer, or `check`'s when none stands.
    public func readiness(_ check: @escaping @Sendable () async -> Readiness) async -> Readiness {
        let now = ContinuousClock.now
        let known = state.withLock { state -> Readiness? in
            if state.current { return .ready }
            if let last = state.last, now - last.at < Self.recheckAfter { return last.answer }
            return nil
        }
        if let known { return known }
        let asking = state.withLock { state -> Task<Readiness, Never> in
            if let asking = state.asking { return asking }
            let asking = Task { [weak self] () -> Readiness in
                let answer = await check()
                self?.remember(answer)
                return answer
            }
            state.asking = asking
            return asking
        }
        return await asking.value
    }

    /// Drops what was learned, so the next probe asks: for a store that has just migrated.
    public func forget() {
        state.withLock { state in
            state.current = false
            state.last = nil
        }
    }

    private func remember(_ answer: Readiness) {
        state.withLock { state in
            state.asking = nil
            state.current = answer == .ready
            state.last = (answer, ContinuousClock.now)
        }
    }
}
