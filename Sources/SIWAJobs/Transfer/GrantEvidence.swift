import AppleID
import Clocks
import Foundation
import Synchronization

/// Tells one user's `invalid_grant` from a refused grant, for one transfer job in this process
/// (issue 8 §10, "one user stalls an export").
///
/// `/auth/usermigrationinfo` answers `invalid_grant` when the bearer token expired, when the
/// migration window has closed, and (in public bug reports) for a single user while every other
/// user's call with the same bearer succeeds. `MigrationCall.run` already re-mints the token once;
/// a second `invalid_grant` with the fresh token is judged here:
/// - **per user** when a call of this job succeeded within the last `successMemory` (5 minutes)
///   and fewer than `refusalsInARow` (3) distinct items have been refused since: only this item
///   fails, permanently, saying so;
/// - **every call** when `refusalsInARow` distinct items were refused within `successMemory` with
///   no success in between (the window closed, or Apple refuses the transfer): the job pauses
///   with the recovery. Refusals older than that are forgotten, so a job resumed later starts
///   counting afresh;
/// - **undecided** otherwise (no recent success, e.g. the first calls of a run or after a long
///   pause): the item waits up to `settleWait` (10 s) for another call of the job to settle it, then
///   is retried later (an attempt is charged), so a resumed job never pauses again on one user.
final class GrantEvidence: Sendable {
    static let refusalsInARow = 3
    static let successMemory: Duration = .seconds(300)
    static let settleWait: Duration = .seconds(10)

    enum Verdict: Equatable {
        /// The grant works: a call succeeded this many seconds ago.
        case perUser(secondsSinceSuccess: Int)
        /// This many distinct items were refused in a row.
        case everyCall(refused: Int)
        case undecided
    }

    private struct State {
        var lastSuccess: Date?
        /// Items refused since the last success, with when.
        var refused: [Int64: Date] = [:]
        /// Bumped on every success or refusal; waiters wake when it changes.
        var version = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0

        /// Bumps the version and hands back the waiters to wake (outside the lock).
        mutating func bump() -> [CheckedContinuation<Void, Never>] {
            version += 1
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }

        func verdict(now: Date) -> GrantEvidence.Verdict {
            let memory = GrantEvidence.successMemory.seconds
            let recent = refused.values.filter { now.timeIntervalSince($0) <= memory }.count
            if recent >= GrantEvidence.refusalsInARow { return .everyCall(refused: recent) }
            if let lastSuccess, now.timeIntervalSince(lastSuccess) <= memory {
                return .perUser(secondsSinceSuccess: Int(now.timeIntervalSince(lastSuccess)))
            }
            return .undecided
        }
    }

    private let state = Mutex(State())
    private let clock: any WallClock

    /// - Parameter clock: judges `successMemory` and `settleWait`.
    init(clock: any WallClock) {
        self.clock = clock
    }

    /// A call of this job succeeded: the grant works.
    func succeeded() {
        let now = clock.now
        wake(state.withLock { s in
            s.lastSuccess = now
            s.refused.removeAll()
            return s.bump()
        })
    }

    /// Judges `item`'s refusal (an `invalid_grant` with a freshly minted token), waiting up to
    /// `settleWait` while it is undecided. A cancelled task stops waiting (undecided).
    func judge(item: Int64) async -> Verdict {
        let deadline = clock.now.addingTimeInterval(Self.settleWait.seconds)
        var (verdict, version) = record(item)
        while verdict == .undecided {
            let remaining = deadline.timeIntervalSince(clock.now)
            guard remaining > 0, !Task.isCancelled else { break }
            let seen = version
            await clock.sleep(for: .seconds(fractional: remaining)) { await self.changed(since: seen) }
            (verdict, version) = state.withLock { s in (s.verdict(now: clock.now), s.version) }
            if version == seen { break }   // the deadline passed (or the task was cancelled)
        }
        return verdict
    }

    private func record(_ item: Int64) -> (Verdict, Int) {
        let now = clock.now
        let (result, waiters) = state.withLock { s -> ((Verdict, Int), [CheckedContinuation<Void, Never>]) in
            s.refused[item] = now
            let waiters = s.bump()
            return ((s.verdict(now: now), s.version), waiters)
        }
        wake(waiters)
        return result
    }

    /// Returns once the state changed after `version`, or at once when the task is cancelled.
    private func changed(since version: Int) async {
        let id = state.withLock { s -> Int in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.version != version || Task.isCancelled { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    private func wake(_ waiters: [CheckedContinuation<Void, Never>]) {
        for waiter in waiters { waiter.resume() }
    }
}

extension MigrationCall {
    /// Settles a failure before the kind records it: a refused grant is judged by `evidence`
    /// (`grantRefused` stays for every call, else `userRefused` or `undecided`); a call error
    /// gets the attempt rule of a non-JSON 4xx (`AppleIDError.atAttempt`). Others are unchanged.
    /// - Parameters:
    ///   - item: the item's id (refusals count distinct items).
    ///   - attempt: the item's attempt, 1-based.
    static func settle(_ failure: MigrationCallFailure, item: Int64, attempt: Int,
                       evidence: GrantEvidence) async -> MigrationCallFailure {
        switch failure {
        case .grantRefused(let error):
            switch await evidence.judge(item: item) {
            case .everyCall: return failure
            case .undecided: return .undecided(error)
            case .perUser(let ago):
                return .userRefused(error, note: "Apple answered invalid_grant for this user even with a freshly minted token, "
                    + "while another user's call of this job with the same kind of token succeeded \(ago) s before: a refusal "
                    + "of this user only (the grant itself works), so only this item fails")
            }
        case .call(let error):
            return .call(error.atAttempt(attempt))
        default:
            return failure
        }
    }
}
