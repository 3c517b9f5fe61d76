import Synchronization

/// A one-shot signal: `fire()` releases every `wait()`, now and later. A waiting task that is
/// cancelled returns at once, so a task group holding a waiter can always be torn down.
final class StopSignal: Sendable {
    private struct State {
        var fired = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var next = 0
    }
    private let state = Mutex(State())

    func fire() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.fired = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    var isFired: Bool { state.withLock { $0.fired } }

    func wait() async {
        let id = state.withLock { s -> Int in
            s.next += 1
            return s.next
        }
        await waitCancellably { c in
            state.withLock { s -> Bool in
                if s.fired || Task.isCancelled { return true }
                s.waiters[id] = c
                return false
            }
        } unpark: {
            state.withLock { $0.waiters.removeValue(forKey: id) }
        }
    }
}
