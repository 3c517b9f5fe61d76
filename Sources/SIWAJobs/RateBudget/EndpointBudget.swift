import AppleID
import Clocks
import Foundation
import Queue
import Synchronization

/// This process's side of one shared budget (a team and an endpoint): calls wait here for a
/// permit, oldest first. One dispatcher task (`EndpointBudget+Dispatch.swift`) fetches grants
/// from the store and hands their permits out spaced evenly over the grant window, so N
/// processes together send at the shared rate without bursts. A 429 (`observe`) stops every
/// local waiter at once and pauses the team in the store; other processes see the pause at their
/// next grant. At start and after every pause, one call goes alone and its answer is awaited
/// before more are sent (`Probe`). Waits end at once when the waiting task is cancelled or the
/// budget is stopped.
final class EndpointBudget: Sendable {
    typealias Waiter = (id: UInt64, continuation: CheckedContinuation<Result<Void, AppleIDError>, Never>)

    /// The lone first call (`RateBudgetPolicy.probes`): a process that starts, or whose pause
    /// ends, may be facing a limit still in force. It sends one call and waits for its answer (or
    /// `probeTimeout`) before releasing more, so such a limit costs one call per process instead
    /// of the calls admitted before the first 429 is read.
    enum Probe: Equatable {
        /// Calls flow at the grant's spacing.
        case none
        /// The next permit taken is the probe.
        case pending
        /// The probe was admitted; nothing else is until its answer or `until`.
        case outstanding(until: Date)
    }

    struct State {
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        /// Permits left of the current grant, usable until `expiresAt`, one per `spacing` from `nextRelease`.
        var permits = 0
        var expiresAt = Date.distantPast
        var spacing: Duration = .zero
        var nextRelease = Date.distantPast
        /// A 429's `Retry-After`, this process's or (read at a grant) another's.
        var pausedUntil: Date?
        /// The bucket is empty, or the store failed: the next grant is asked for then.
        var notBefore: Date?
        /// The shared rate as last answered, requests/s (sizes the next grant).
        var rate: Double
        var failures = 0
        var probe: Probe
        var stopped = false
        var dispatcher: Task<Void, Never>?
    }

    let key: RateBudgetKey
    /// Requests/s, > 0.
    let ceiling: Double
    let policy: RateBudgetPolicy
    let store: any RateBudgetStore
    let clock: any WallClock
    let logger: Logger
    let state: Mutex<State>
    /// Wakes the dispatcher: a waiter arrived, a 429 paused the budget, or it stopped.
    let wake = WakeSignal()

    init(key: RateBudgetKey, ceiling: Double, policy: RateBudgetPolicy, store: any RateBudgetStore, clock: any WallClock,
         logger: Logger) {
        self.key = key
        self.ceiling = ceiling
        self.policy = policy
        self.store = store
        self.clock = clock
        self.logger = logger
        self.state = Mutex(State(rate: ceiling, probe: policy.probes ? .pending : .none))
    }

    /// How many calls wait for a permit now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns when a permit is this caller's.
    /// - Throws: `AppleIDError` with `transportKind == .cancelled` when the task is cancelled or
    ///   the budget stops while waiting; transient when the store failed
    ///   `policy.failuresBeforeGivingUp` times in a row.
    func admit() async throws(AppleIDError) {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, AppleIDError>, Never>) in
                let now = clock.now
                let immediate: Result<Void, AppleIDError>? = state.withLock { s in
                    if s.stopped { return .failure(stoppedError) }
                    if Task.isCancelled { return .failure(cancelledError) }
                    if s.waiters.isEmpty, takePermit(&s, now: now) { return .success(()) }
                    s.waiters.append((id, continuation))
                    if s.dispatcher == nil {
                        // Owned by this budget: it ends when the budget stops, and shutdown() awaits it.
                        s.dispatcher = Task { await self.dispatch() }
                    }
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) } else { wake.signal() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: .failure(cancelledError))
        }
        try result.get()
    }

    /// Takes a permit of the current grant if one may be used at `now` (not paused, no probe
    /// awaiting its answer, not expired, its turn in the spacing has come). The permit taken while
    /// a probe is pending is the probe.
    func takePermit(_ s: inout State, now: Date) -> Bool {
        if let until = s.pausedUntil, until > now { return false }
        if probeOutstanding(&s, now: now) != nil { return false }
        guard s.permits > 0, now < s.expiresAt, now >= s.nextRelease else { return false }
        s.permits -= 1
        s.nextRelease = max(s.nextRelease, now.addingTimeInterval(-s.spacing.seconds)).addingTimeInterval(s.spacing.seconds)
        if s.probe == .pending { s.probe = .outstanding(until: now.addingTimeInterval(policy.probeTimeout.seconds)) }
        return true
    }

    /// When the outstanding probe's wait ends, or nil if none is outstanding at `now` (one past
    /// its deadline is dropped: its answer was lost, and calls flow again).
    func probeOutstanding(_ s: inout State, now: Date) -> Date? {
        guard case .outstanding(let until) = s.probe else { return nil }
        if until > now { return until }
        s.probe = .none
        return nil
    }

    /// An admitted call ended without a 429 (any other answer, or none: a transport failure or a
    /// cancellation). It ends an outstanding probe: the waiting calls flow again.
    func answered() {
        let ended = state.withLock { s -> Bool in
            guard case .outstanding = s.probe else { return false }
            s.probe = .none
            return true
        }
        if ended { wake.signal() }
    }

    /// An answer to an admitted call. A 429 pauses this process's waiters at once for its
    /// `Retry-After` (`policy.pause`), drops the grant in hand, and reports it to the store, which
    /// slows the team's rate and pauses every other worker at its next grant; the first call
    /// after the pause is a probe. Any other status ends an outstanding probe.
    func observe(status: Int, retryAfter: Duration?) async {
        guard status == 429 else { return answered() }
        let pause = policy.pause(retryAfter: retryAfter)
        let now = clock.now
        state.withLock { s in
            s.pausedUntil = max(s.pausedUntil ?? now, now.addingTimeInterval(pause.seconds))
            s.permits = 0
            if policy.probes { s.probe = .pending }
        }
        wake.signal()
        do {
            let receipt = try await store.throttled(key, ceiling: ceiling, pause: pause, policy: policy)
            state.withLock { s in
                s.rate = receipt.rate
                s.pausedUntil = max(s.pausedUntil ?? now, now.addingTimeInterval(receipt.pause.seconds))
            }
            if receipt.decreased {
                logger.info("apple rate budget: 429: the team's rate is lowered and every worker paused", fields(
                    ["rate_rps": String(format: "%.1f", receipt.rate), "pause_s": String(format: "%.3f", receipt.pause.seconds)]))
            }
        } catch {
            logger.warning("apple rate budget: a 429 could not be recorded; other workers are not paused",
                           fields(["error": "\(error)"]))
        }
    }

    /// Ends every wait now (each throws the cancellation error, so its item is released) and
    /// every later one; the dispatcher returns. Idempotent.
    func stop() {
        let waiters = state.withLock { s -> [Waiter] in
            s.stopped = true
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for waiter in waiters { waiter.continuation.resume(returning: .failure(stoppedError)) }
        wake.signal()
    }

    /// `stop()`, then waits for the dispatcher to return (after its round trip in flight, if any).
    func shutdown() async {
        stop()
        await state.withLock { $0.dispatcher }?.value
    }

    /// The log fields of this budget plus `extra`.
    func fields(_ extra: [String: String] = [:]) -> [String: String] {
        extra.merging(["team.id": key.teamID, "apple.endpoint": key.endpoint.rawValue]) { a, _ in a }
    }

    var cancelledError: AppleIDError {
        AppleIDError(errorClass: .transient, detail: "cancelled while waiting for a permit of the rate budget (\(key))",
                     transportKind: .cancelled)
    }

    var stoppedError: AppleIDError {
        AppleIDError(errorClass: .transient, detail: "stopping: released while waiting for a permit of the rate budget (\(key))",
                     transportKind: .cancelled)
    }
}
