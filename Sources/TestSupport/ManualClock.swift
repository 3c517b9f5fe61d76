import Clocks
import Foundation
import Synchronization

/// A `WallClock` that only moves when a test says so. `sleep(for:)` suspends until `advance(by:)`
/// moves the clock past the sleeper's deadline (or the task is cancelled), so tests of expiry,
/// backoff and lease timing never wait on real time.
public final class ManualClock: WallClock, Sendable {
    private struct Sleeper {
        let deadline: Date
        let continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var now: Date
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }
    private let state: Mutex<State>

    /// - Parameter start: the clock's initial instant (default 2025-01-01T00:00:00Z).
    public init(start: Date = Date(timeIntervalSince1970: 1_735_689_600)) {
        state = Mutex(State(now: start))
    }

    public var now: Date { state.withLock { $0.now } }

    /// How many tasks are currently suspended in `sleep(for:)`.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { s -> UInt64 in s.nextID += 1; return s.nextID }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: Bool = state.withLock { s in
                    let deadline = s.now.addingTimeInterval(duration.seconds)
                    if Task.isCancelled || deadline <= s.now { return true }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow {
                    if Task.isCancelled { continuation.resume(throwing: CancellationError()) } else { continuation.resume() }
                }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward and wakes every sleeper whose deadline has been reached.
    public func advance(by duration: Duration) {
        let due: [Sleeper] = state.withLock { s in
            s.now = s.now.addingTimeInterval(duration.seconds)
            let ready = s.sleepers.filter { $0.value.deadline <= s.now }
            for key in ready.keys { s.sleepers.removeValue(forKey: key) }
            return Array(ready.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
