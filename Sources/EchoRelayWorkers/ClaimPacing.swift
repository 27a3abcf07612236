import Synchronization

/// When a worker that was handed work also claims: River's producer fetches again only after
/// a full fetch; here also when nothing was handed over (a wake from elsewhere, the poll) and
/// once a poll interval, for work only a claim finds (lapsed leases, retries come due, other
/// processes' work).
final class ClaimPacing: Sendable {
    private let state = Mutex<(at: ContinuousClock.Instant?, full: Bool)>((nil, false))

    /// The handed-over items, then, when a claim is due and slots are left of `free`, what
    /// `claim` takes for the rest.
    func after<Item>(
        _ handed: [Item], free: Int, every interval: Duration, claim: (_ room: Int) async throws -> [Item]
    ) async throws -> [Item] {
        let room = free - handed.count
        guard room > 0, handed.isEmpty || due(every: interval) else { return handed }
        let claimed = try await claim(room)
        state.withLock { $0 = (ContinuousClock.now, claimed.count == room) }
        return handed + claimed
    }

    private func due(every interval: Duration) -> Bool {
        state.withLock { state in
            state.full || state.at.map { ContinuousClock.now - $0 >= interval } ?? true
        }
    }
}
