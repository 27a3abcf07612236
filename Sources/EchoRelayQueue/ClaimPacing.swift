import Synchronization

/// When a worker that was handed work also claims: River's producer fetches again only after
/// a full fetch; here also when a wake asked for a claim (work made due that nobody was
/// handed, another process's notice) and once a poll interval, for work only a claim finds
/// (lapsed leases, retries come due). A wake for hand-offs alone costs no claim.
public final class ClaimPacing: Sendable {
    private struct State {
        var at: ContinuousClock.Instant?
        var full = false
        /// A claim was asked for and has not run yet (no room at the time): it runs next.
        var asked = false
    }

    private let state = Mutex(State())
    /// Whether any claim that found something counts as full (claims again at the next call),
    /// not only one that filled its room: for a claim whose room is cut by a cap per
    /// subscription, so that it rarely fills the worker's free slots however much is due.
    private let againAfterAnyFind: Bool

    public init(againAfterAnyFind: Bool = false) {
        self.againAfterAnyFind = againAfterAnyFind
    }

    /// The handed-over items, then, when a claim is due and slots are left of `free`, what
    /// `claim` takes for the rest.
    /// - asked: whether a wake since the last call asked for a claim.
    public func after<Item>(
        _ handed: [Item], free: Int, every interval: Duration, asked: Bool, claim: (_ room: Int) async throws -> [Item]
    ) async throws -> [Item] {
        let room = free - handed.count
        guard due(room: room, every: interval, asked: asked) else { return handed }
        let claimed: [Item]
        do {
            claimed = try await claim(room)
        } catch {
            failed()
            throw error
        }
        ended(found: claimed.count, room: room)
        return handed + claimed
    }

    /// Whether a claim with `room` slots is due now; when it is, the ask (this one or one kept
    /// from before) is taken, and the caller claims and then says `ended` or `failed`.
    /// - spacing: none is due sooner than this after the last ended; an ask meanwhile is kept.
    public func due(room: Int, every interval: Duration, asked: Bool, spacing: Duration = .zero) -> Bool {
        state.withLock { state in
            state.asked = state.asked || asked
            let since = state.at.map { ContinuousClock.now - $0 }
            if let since, since < spacing { return false }
            let due = room > 0 && (state.asked || state.full || since.map { $0 >= interval } ?? true)
            if due { state.asked = false }
            return due
        }
    }

    /// A claim with `room` slots found `found` items.
    public func ended(found: Int, room: Int) {
        let full = againAfterAnyFind ? found > 0 : found == room
        state.withLock { $0.at = ContinuousClock.now; $0.full = full }
    }

    /// A claim failed: the next call claims again (the loop tries again after its back-off).
    public func failed() {
        state.withLock { $0.asked = true }
    }
}
