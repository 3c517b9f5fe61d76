import AppleID
import Clocks
import Foundation
import Lifecycle
import Synchronization

extension EndpointBudget {
    /// What the dispatcher does next.
    enum Step {
        case exit
        case idle
        case sleep(Duration)
        case release(Waiter)
        case fetch(want: Int)
    }

    /// The dispatcher: while anyone waits, hands out the grant in hand one permit per spacing,
    /// and fetches the next grant when it is used up or expired (an expired grant's permits are
    /// dropped, never honoured). Returns when the budget stops.
    func dispatch() async {
        while true {
            switch nextStep() {
            case .exit:
                return
            case .idle:
                await wake.wait()
            case .sleep(let duration):
                await clock.sleep(for: duration, unless: { await self.wake.wait() })
            case .release(let waiter):
                waiter.continuation.resume(returning: .success(()))
            case .fetch(let want):
                await fetch(want: want)
            }
        }
    }

    func nextStep() -> Step {
        let now = clock.now
        return state.withLock { s -> Step in
            if s.stopped { return .exit }
            if s.waiters.isEmpty { return .idle }
            let until = [s.pausedUntil, s.notBefore].compactMap { $0 }.max()
            if let until, until > now { return .sleep(.seconds(fractional: until.timeIntervalSince(now))) }
            s.pausedUntil = nil
            s.notBefore = nil
            // The probe's answer wakes the dispatcher (`answered`, `observe`); its deadline is a bound.
            if let until = probeOutstanding(&s, now: now) { return .sleep(.seconds(fractional: until.timeIntervalSince(now))) }
            if s.permits > 0, now < s.expiresAt {
                if takePermit(&s, now: now) { return .release(s.waiters.removeFirst()) }
                return .sleep(.seconds(fractional: min(s.nextRelease, s.expiresAt).timeIntervalSince(now)))
            }
            s.permits = 0
            return .fetch(want: s.probe == .pending ? 1 : min(s.waiters.count, policy.largestGrant(rate: s.rate)))
        }
    }

    /// One grant round trip; its answer becomes the grant in hand, a wait, or a pause. After
    /// `policy.failuresBeforeGivingUp` failures in a row the items waiting are failed (transient).
    func fetch(want: Int) async {
        let answer: Result<RateGrant, any Error>
        do {
            answer = .success(try await store.grant(key, ceiling: ceiling, want: want, policy: policy))
        } catch {
            answer = .failure(error)
        }
        let now = clock.now
        let (failed, pausedAnew) = state.withLock { s -> ([Waiter], Duration?) in
            switch answer {
            case .success(.permits(let count, let rate)):
                s.failures = 0
                s.rate = rate
                s.permits = count
                s.spacing = policy.grantWindow / count
                s.expiresAt = now.addingTimeInterval(policy.grantLifetime.seconds)
                s.nextRelease = now
            case .success(.wait(let duration, let rate)):
                s.failures = 0
                s.rate = rate
                // Jittered, so processes waiting for the same bucket do not ask in lockstep.
                s.notBefore = now.addingTimeInterval(duration.seconds * Double.random(in: 1...1.2))
            case .success(.paused(let duration)):
                s.failures = 0
                let anew = s.pausedUntil.map { $0 <= now } ?? true
                s.pausedUntil = max(s.pausedUntil ?? now, now.addingTimeInterval(duration.seconds))
                if policy.probes { s.probe = .pending }
                return ([], anew ? duration : nil)
            case .failure:
                s.failures += 1
                s.notBefore = now.addingTimeInterval(min(2, 0.1 * pow(2, Double(s.failures - 1))))
                if s.failures >= policy.failuresBeforeGivingUp {
                    s.failures = 0
                    defer { s.waiters.removeAll() }
                    return (s.waiters, nil)
                }
            }
            return ([], nil)
        }
        if let pausedAnew {
            logger.info("apple rate budget: paused: a Retry-After is in force for the team",
                        fields(["pause_s": String(format: "%.3f", pausedAnew.seconds)]))
        }
        if case .failure(let error) = answer {
            logger.warning("apple rate budget: a grant could not be read", fields(["error": "\(error)"]))
            let unavailable = AppleIDError(errorClass: .transient, detail: "the rate budget (\(key)) could not be read: \(error)")
            for waiter in failed { waiter.continuation.resume(returning: .failure(unavailable)) }
        }
    }
}

/// A level-triggered wake-up for one waiting task: a `signal()` with nobody waiting is kept for
/// the next `wait()`. A cancelled waiter returns at once.
final class WakeSignal: Sendable {
    private let state = Mutex<(pending: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let waiter = s.waiter else {
                s.pending = true
                return nil
            }
            s.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await waitCancellably { continuation in
            state.withLock { s in
                if s.pending || Task.isCancelled {
                    s.pending = false
                    return true
                }
                s.waiter = continuation
                return false
            }
        } unpark: {
            state.withLock { s in
                defer { s.waiter = nil }
                return s.waiter
            }
        }
    }
}
