import AppleID
import Foundation
import Queue
import SIWAJobs
import Synchronization
import TestSupport

/// A `RateBudgetStore` whose grants come from a script (then `fallback`), recording every call.
final class ScriptedBudgetStore: RateBudgetStore {
    struct Failure: Error, CustomStringConvertible { var description: String { "scripted store failure" } }

    struct State {
        var script: [Result<RateGrant, Failure>] = []
        var fallback: Result<RateGrant, Failure>
        var wants: [Int] = []
        var pauses: [Duration] = []
    }
    let state: Mutex<State>

    init(_ script: [Result<RateGrant, Failure>], fallback: Result<RateGrant, Failure> = .success(.wait(.seconds(3600), rate: 10))) {
        state = Mutex(State(script: script, fallback: fallback))
    }

    func grant(_ key: RateBudgetKey, ceiling: Double, want: Int, policy: RateBudgetPolicy) async throws -> RateGrant {
        let next = state.withLock { s -> Result<RateGrant, Failure> in
            s.wants.append(want)
            return s.script.isEmpty ? s.fallback : s.script.removeFirst()
        }
        return try next.get()
    }

    func throttled(_ key: RateBudgetKey, ceiling: Double, pause: Duration, policy: RateBudgetPolicy) async throws -> ThrottleReceipt {
        state.withLock { $0.pauses.append(pause) }
        return ThrottleReceipt(rate: ceiling * policy.decrease, pause: pause, decreased: true)
    }

    /// The `want` of every grant asked for, in order.
    var wants: [Int] { state.withLock { $0.wants } }
    var pauses: [Duration] { state.withLock { $0.pauses } }
}

/// Waits (real time, with a deadline naming what) until `condition` holds; a liveness bound only.
func until(_ what: String, _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(2))
    }
}

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "waited 30 s for: \(what)" }
}

/// Counts admissions of tasks started with `admit(_:)`, and their errors.
final class Admissions: Sendable {
    let state = Mutex<(admitted: Int, errors: [AppleIDError])>((0, []))
    var admitted: Int { state.withLock { $0.admitted } }
    var errors: [AppleIDError] { state.withLock { $0.errors } }

    /// One task waiting for a permit of `budget`'s `/auth/token`; the test owns and awaits or cancels it.
    func admit(_ budget: RateBudget) -> Task<Void, Never> {
        Task {
            do throws(AppleIDError) {
                try await budget.admit(.token)
                state.withLock { $0.admitted += 1 }
            } catch {
                state.withLock { $0.errors.append(error) }
            }
        }
    }
}

extension RateBudget {
    /// A budget of team `TEAMA12345` at `ceiling` on `store`, silent logs.
    static func testing(_ store: ScriptedBudgetStore, clock: ManualClock, ceiling: Double = 20,
                        policy: RateBudgetPolicy = RateBudgetPolicy()) -> RateBudget {
        RateBudget(teamID: "TEAMA12345", ceiling: ceiling, store: store, policy: policy, clock: clock,
                   logger: Logger(label: "test", sink: MemoryLogSink()))
    }
}
