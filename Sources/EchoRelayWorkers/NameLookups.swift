import Dispatch
import NIOPosix
import Synchronization

/// Where subscriber names are looked up: getaddrinfo, which blocks, on a few threads of its
/// own rather than on Dispatch's (which starts another thread for each one blocked, without
/// bound) or the Swift concurrency pool's (which a slow resolver would stall). A name being
/// looked up is not looked up again meanwhile: every caller that asks for it waits for the
/// one look-up under way. So a subscriber whose DNS hangs holds one thread however many of
/// its deliveries wait, and the others' names go on resolving on the rest.
public final class NameLookups: Sendable {
    /// The process's, for every delivery: at most this many names are looked up at once.
    public static let system = NameLookups(threads: 8)

    private let threads: NIOThreadPool
    private let resolve: @Sendable (String) -> AddressResolver.LookUp
    /// The callers waiting for each name being looked up.
    private let waiting = Mutex<[String: [Completion]]>([:])

    /// `resolve` is the blocking look-up (getaddrinfo unless a test gives another).
    public init(threads: Int, resolve: @escaping @Sendable (String) -> AddressResolver.LookUp = AddressResolver.blockingLookUp) {
        self.threads = NIOThreadPool(numberOfThreads: threads)
        self.threads.start()
        self.resolve = resolve
    }

    /// Ends the threads once the look-ups under way return (the system's are never ended).
    public func shutdown() async throws {
        try await threads.shutdownGracefully()
    }

    /// `name`'s addresses, or why not: the caller stops waiting on timeout or cancellation (the
    /// look-up goes on, and its answer serves whoever asks for the name meanwhile).
    public func lookUp(_ name: String, timeout: Duration) async -> AddressResolver.LookUp {
        let completion = Completion()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard completion.arm(continuation) else { return }
                let first = waiting.withLock { waiting in
                    defer { waiting[name, default: []].append(completion) }
                    return waiting[name] == nil
                }
                if first { threads.submit { state in self.answer(name, state == .active ? self.resolve(name) : .cancelled) } }
                let (seconds, attoseconds) = timeout.components
                let delay = Double(seconds) + Double(attoseconds) * 1e-18
                DispatchQueue.global().asyncAfter(deadline: .now() + delay) { completion.finish(.timedOut) }
            }
        } onCancel: {
            completion.finish(.cancelled)
        }
    }

    private func answer(_ name: String, _ outcome: AddressResolver.LookUp) {
        for completion in waiting.withLock({ $0.removeValue(forKey: name) ?? [] }) { completion.finish(outcome) }
    }

    /// Resumes the waiting task exactly once, with whichever of answer, timeout or cancellation
    /// comes first.
    private final class Completion: Sendable {
        private enum State {
            case idle
            case waiting(CheckedContinuation<AddressResolver.LookUp, Never>)
            case finished
        }

        private let state = Mutex<State>(.idle)

        /// Registers the continuation; `false` (after resuming it) if the task was already cancelled.
        func arm(_ continuation: CheckedContinuation<AddressResolver.LookUp, Never>) -> Bool {
            let armed = state.withLock { state in
                guard case .idle = state else { return false }
                state = .waiting(continuation)
                return true
            }
            if !armed { continuation.resume(returning: .cancelled) }
            return armed
        }

        func finish(_ outcome: AddressResolver.LookUp) {
            let continuation = state.withLock { state -> CheckedContinuation<AddressResolver.LookUp, Never>? in
                defer { state = .finished }
                guard case .waiting(let continuation) = state else { return nil }
                return continuation
            }
            continuation?.resume(returning: outcome)
        }
    }
}
